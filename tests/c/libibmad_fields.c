/*
 * libibmad_fields.c - an independent MAD encoder for the madstack interop
 * test (tests/libibmad_interop.rs).
 *
 * Every field libibmad's field table knows (enum MAD_FIELDS in
 * <infiniband/mad.h>) is written with libibmad's own setters
 * (mad_set_field / mad_set_field64 / mad_set_array) into zeroed 256-byte
 * MAD buffers, grouped by the header, attribute or record it belongs to.
 * The program prints, line by line:
 *
 *   buffer NAME ROUND
 *   part GROUP BASE
 *   field GROUP ENUM_NAME PRINT_NAME KIND BIT_OFF BIT_LEN VALUE
 *   bytes HEX
 *   end
 *
 * GROUP BASE: the group's fields are relative to byte BASE of the buffer.
 * KIND: u32 (mad_set_field), u64 (mad_set_field64) or arr (mad_set_array).
 * BIT_OFF / BIT_LEN: where the field lands, found by probing libibmad itself
 * (set all ones into a zeroed buffer, see which bits changed), counted
 * MSB-first from byte BASE of the buffer; so they are the field's real
 * wire position whatever libibmad's internal BITSOFFS convention is.
 * VALUE: 0x-hex integer for u32/u64, plain hex bytes for arr.
 *
 * Lines starting with "quirk" report something libibmad does that is not a
 * clean field: bits that are not one contiguous run, or a field that does
 * not read back the value just written (overlap with another field).
 *
 * "spill GROUP ENUM N" lines (round 0 only) report u32 fields for which
 * mad_set_field(0xffffffff) changes N bits outside the field: libibmad's
 * setter does not mask values wider than the field.
 *
 * Round 0 writes every field at its maximum value; later rounds write
 * deterministic pseudo-random values (xorshift64*, fixed seed), distinct
 * within a buffer wherever the width allows.
 *
 * Before printing anything, the program checks that every field of the
 * installed libibmad with a print name appears in some buffer below, so a
 * newer libibmad with new fields fails loudly instead of being skipped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mad.h>

#define MAD_SIZE 256
#define ROUNDS 8

enum kind { K32, K64, KARR };

struct fld {
	enum MAD_FIELDS f;
	const char *ename;
	enum kind k;
	int extra; /* byte offset of the field's origin inside the part */
};

struct part {
	const char *group;
	int base;
	const struct fld *fields;
	int n;
};

struct buffer {
	const char *name;
	const struct part *parts;
	int n;
};

#define F32(x) { x, #x, K32, 0 }
#define F64(x) { x, #x, K64, 0 }
#define FARR(x) { x, #x, KARR, 0 }
#define F32X(x, e) { x, #x, K32, e }
#define F64X(x, e) { x, #x, K64, e }
#define FARRX(x, e) { x, #x, KARR, e }
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define PART(g, b, a) { g, b, a, N(a) }
#define BUF(name, a) { name, a, N(a) }

/* ---------------------------------------------------------------- headers */

static const struct fld mad_common[] = {
	F32(IB_MAD_METHOD_F), F32(IB_MAD_RESPONSE_F), F32(IB_MAD_CLASSVER_F),
	F32(IB_MAD_MGMTCLASS_F), F32(IB_MAD_BASEVER_F), F32(IB_MAD_STATUS_F),
	F64(IB_MAD_TRID_F), F32(IB_MAD_ATTRID_F), F32(IB_MAD_ATTRMOD_F),
};
static const struct fld smp_lid[] = { F64(IB_MAD_MKEY_F) };
/* The DR SMP splits the status word: no IB_MAD_STATUS_F here. */
static const struct fld smp_dr[] = {
	F32(IB_MAD_METHOD_F), F32(IB_MAD_RESPONSE_F), F32(IB_MAD_CLASSVER_F),
	F32(IB_MAD_MGMTCLASS_F), F32(IB_MAD_BASEVER_F),
	F64(IB_MAD_TRID_F), F32(IB_MAD_ATTRID_F), F32(IB_MAD_ATTRMOD_F),
	F32(IB_DRSMP_HOPCNT_F), F32(IB_DRSMP_HOPPTR_F), F32(IB_DRSMP_STATUS_F),
	F32(IB_DRSMP_DIRECTION_F), F64(IB_MAD_MKEY_F), F32(IB_DRSMP_DRDLID_F),
	F32(IB_DRSMP_DRSLID_F), FARR(IB_DRSMP_PATH_F), FARR(IB_DRSMP_RPATH_F),
};
static const struct fld rmpp_data[] = {
	F32(IB_SA_RMPP_VERS_F), F32(IB_SA_RMPP_TYPE_F), F32(IB_SA_RMPP_RESP_F),
	F32(IB_SA_RMPP_FLAGS_F), F32(IB_SA_RMPP_STATUS_F),
	F32(IB_SA_RMPP_SEGNUM_F), F32(IB_SA_RMPP_LEN_F),
};
static const struct fld rmpp_ack[] = {
	F32(IB_SA_RMPP_VERS_F), F32(IB_SA_RMPP_TYPE_F), F32(IB_SA_RMPP_RESP_F),
	F32(IB_SA_RMPP_FLAGS_F), F32(IB_SA_RMPP_STATUS_F),
	F32(IB_SA_RMPP_SEGNUM_F), F32(IB_SA_RMPP_NEWWIN_F),
};
static const struct fld rmpp_raw[] = {
	F32(IB_SA_RMPP_VERS_F), F32(IB_SA_RMPP_TYPE_F), F32(IB_SA_RMPP_RESP_F),
	F32(IB_SA_RMPP_FLAGS_F), F32(IB_SA_RMPP_STATUS_F),
	F32(IB_SA_RMPP_D1_F), F32(IB_SA_RMPP_D2_F),
};
static const struct fld sa_hdr[] = {
	F64(IB_SA_MKEY_F), F32(IB_SA_ATTROFFS_F), F64(IB_SA_COMPMASK_F),
};
static const struct fld sa_data[] = { FARR(IB_SA_DATA_F) };
static const struct fld gs_data[] = { FARR(IB_GS_DATA_F) };
static const struct fld vend2_hdr[] = { F32(IB_VEND2_OUI_F) };
static const struct fld vend2_data[] = { FARR(IB_VEND2_DATA_F) };
static const struct fld cc_hdr[] = { F64(IB_CC_CCKEY_F) };

/* ------------------------------------------------------- SMP attributes */

static const struct fld node_info[] = {
	F32(IB_NODE_BASE_VERS_F), F32(IB_NODE_CLASS_VERS_F), F32(IB_NODE_TYPE_F),
	F32(IB_NODE_NPORTS_F), F64(IB_NODE_SYSTEM_GUID_F), F64(IB_NODE_GUID_F),
	F64(IB_NODE_PORT_GUID_F), F32(IB_NODE_PARTITION_CAP_F),
	F32(IB_NODE_DEVID_F), F32(IB_NODE_REVISION_F), F32(IB_NODE_LOCAL_PORT_F),
	F32(IB_NODE_VENDORID_F),
};
static const struct fld node_desc[] = { FARR(IB_NODE_DESC_F) };
static const struct fld port_info[] = {
	F64(IB_PORT_MKEY_F), F64(IB_PORT_GID_PREFIX_F), F32(IB_PORT_LID_F),
	F32(IB_PORT_SMLID_F), F32(IB_PORT_CAPMASK_F), F32(IB_PORT_DIAG_F),
	F32(IB_PORT_MKEY_LEASE_F), F32(IB_PORT_LOCAL_PORT_F),
	F32(IB_PORT_LINK_WIDTH_ENABLED_F), F32(IB_PORT_LINK_WIDTH_SUPPORTED_F),
	F32(IB_PORT_LINK_WIDTH_ACTIVE_F), F32(IB_PORT_LINK_SPEED_SUPPORTED_F),
	F32(IB_PORT_STATE_F), F32(IB_PORT_PHYS_STATE_F),
	F32(IB_PORT_LINK_DOWN_DEF_F), F32(IB_PORT_MKEY_PROT_BITS_F),
	F32(IB_PORT_LMC_F), F32(IB_PORT_LINK_SPEED_ACTIVE_F),
	F32(IB_PORT_LINK_SPEED_ENABLED_F), F32(IB_PORT_NEIGHBOR_MTU_F),
	F32(IB_PORT_SMSL_F), F32(IB_PORT_VL_CAP_F), F32(IB_PORT_INIT_TYPE_F),
	F32(IB_PORT_VL_HIGH_LIMIT_F), F32(IB_PORT_VL_ARBITRATION_HIGH_CAP_F),
	F32(IB_PORT_VL_ARBITRATION_LOW_CAP_F), F32(IB_PORT_INIT_TYPE_REPLY_F),
	F32(IB_PORT_MTU_CAP_F), F32(IB_PORT_VL_STALL_COUNT_F),
	F32(IB_PORT_HOQ_LIFE_F), F32(IB_PORT_OPER_VLS_F),
	F32(IB_PORT_PART_EN_INB_F), F32(IB_PORT_PART_EN_OUTB_F),
	F32(IB_PORT_FILTER_RAW_INB_F), F32(IB_PORT_FILTER_RAW_OUTB_F),
	F32(IB_PORT_MKEY_VIOL_F), F32(IB_PORT_PKEY_VIOL_F),
	F32(IB_PORT_QKEY_VIOL_F), F32(IB_PORT_GUID_CAP_F),
	F32(IB_PORT_CLIENT_REREG_F), F32(IB_PORT_MCAST_PKEY_SUPR_ENAB_F),
	F32(IB_PORT_SUBN_TIMEOUT_F), F32(IB_PORT_RESP_TIME_VAL_F),
	F32(IB_PORT_LOCAL_PHYS_ERR_F), F32(IB_PORT_OVERRUN_ERR_F),
	F32(IB_PORT_MAX_CREDIT_HINT_F), F32(IB_PORT_LINK_ROUND_TRIP_F),
	F32(IB_PORT_CAPMASK2_F), F32(IB_PORT_LINK_SPEED_EXT_ACTIVE_F),
	F32(IB_PORT_LINK_SPEED_EXT_SUPPORTED_F),
	F32(IB_PORT_LINK_SPEED_EXT_ENABLED_F),
};
static const struct fld switch_info[] = {
	F32(IB_SW_LINEAR_FDB_CAP_F), F32(IB_SW_RANDOM_FDB_CAP_F),
	F32(IB_SW_MCAST_FDB_CAP_F), F32(IB_SW_LINEAR_FDB_TOP_F),
	F32(IB_SW_DEF_PORT_F), F32(IB_SW_DEF_MCAST_PRIM_F),
	F32(IB_SW_DEF_MCAST_NOT_PRIM_F), F32(IB_SW_LIFE_TIME_F),
	F32(IB_SW_STATE_CHANGE_F), F32(IB_SW_OPT_SLTOVL_MAPPING_F),
	F32(IB_SW_LIDS_PER_PORT_F), F32(IB_SW_PARTITION_ENFORCE_CAP_F),
	F32(IB_SW_PARTITION_ENF_INB_F), F32(IB_SW_PARTITION_ENF_OUTB_F),
	F32(IB_SW_FILTER_RAW_INB_F), F32(IB_SW_FILTER_RAW_OUTB_F),
	F32(IB_SW_ENHANCED_PORT0_F), F32(IB_SW_MCAST_FDB_TOP_F),
};
static const struct fld guid_info[] = {
	F64(IB_GI_GUID0_F), F64(IB_GI_GUID1_F), F64(IB_GI_GUID2_F),
	F64(IB_GI_GUID3_F), F64(IB_GI_GUID4_F), F64(IB_GI_GUID5_F),
	F64(IB_GI_GUID6_F), F64(IB_GI_GUID7_F),
};
/* IB_GUID_GUID0_F is the obsolete alias of IB_GI_GUID0_F. */
static const struct fld guid_info_compat[] = { F64(IB_GUID_GUID0_F) };
static const struct fld sl2vl[] = { F64(IB_SLTOVL_MAPPING_TABLE_F) };
static const struct fld vlarb[] = { FARR(IB_VL_ARBITRATION_TABLE_F) };
static const struct fld lft[] = { FARR(IB_LINEAR_FORW_TBL_F) };
static const struct fld mft[] = { FARR(IB_MULTICAST_FORW_TBL_F) };
static const struct fld sm_info[] = {
	F64(IB_SMINFO_GUID_F), F64(IB_SMINFO_KEY_F), F32(IB_SMINFO_ACT_F),
	F32(IB_SMINFO_PRIO_F), F32(IB_SMINFO_STATE_F),
};
static const struct fld notice[] = {
	F32(IB_NOTICE_IS_GENERIC_F), F32(IB_NOTICE_TYPE_F),
	F32(IB_NOTICE_PRODUCER_F), F32(IB_NOTICE_TRAP_NUMBER_F),
	F32(IB_NOTICE_ISSUER_LID_F), F32(IB_NOTICE_TOGGLE_F),
	F32(IB_NOTICE_COUNT_F), FARR(IB_NOTICE_DATA_DETAILS_F),
};
/* The trap-specific fields lie inside NoticeDataDetails. */
static const struct fld notice_traps[] = {
	F32(IB_NOTICE_IS_GENERIC_F), F32(IB_NOTICE_TYPE_F),
	F32(IB_NOTICE_PRODUCER_F), F32(IB_NOTICE_TRAP_NUMBER_F),
	F32(IB_NOTICE_ISSUER_LID_F), F32(IB_NOTICE_TOGGLE_F),
	F32(IB_NOTICE_COUNT_F), F32(IB_NOTICE_DATA_LID_F),
	F32(IB_NOTICE_DATA_144_LID_F), F32(IB_NOTICE_DATA_144_CAPMASK_F),
};
static const struct fld cpi[] = {
	F32(IB_CPI_BASEVER_F), F32(IB_CPI_CLASSVER_F), F32(IB_CPI_CAPMASK_F),
	F32(IB_CPI_CAPMASK2_F), F32(IB_CPI_RESP_TIME_VALUE_F),
	FARR(IB_CPI_REDIRECT_GID_F), F32(IB_CPI_REDIRECT_TC_F),
	F32(IB_CPI_REDIRECT_SL_F), F32(IB_CPI_REDIRECT_FL_F),
	F32(IB_CPI_REDIRECT_LID_F), F32(IB_CPI_REDIRECT_PKEY_F),
	F32(IB_CPI_REDIRECT_QP_F), F32(IB_CPI_REDIRECT_QKEY_F),
	FARR(IB_CPI_TRAP_GID_F), F32(IB_CPI_TRAP_TC_F), F32(IB_CPI_TRAP_SL_F),
	F32(IB_CPI_TRAP_FL_F), F32(IB_CPI_TRAP_LID_F), F32(IB_CPI_TRAP_PKEY_F),
	F32(IB_CPI_TRAP_HL_F), F32(IB_CPI_TRAP_QP_F), F32(IB_CPI_TRAP_QKEY_F),
};
/* Mellanox vendor-specific SMP attribute ExtendedPortInfo. */
static const struct fld mlnx_ext_port[] = {
	F32(IB_MLNX_EXT_PORT_STATE_CHG_ENABLE_F),
	F32(IB_MLNX_EXT_PORT_LINK_SPEED_SUPPORTED_F),
	F32(IB_MLNX_EXT_PORT_LINK_SPEED_ENABLED_F),
	F32(IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F),
};
static const struct fld port_ext[] = {
	F32(IB_PORT_EXT_CAPMASK_F), F32(IB_PORT_EXT_FEC_MODE_ACTIVE_F),
	F32(IB_PORT_EXT_FDR_FEC_MODE_SUPPORTED_F),
	F32(IB_PORT_EXT_FDR_FEC_MODE_ENABLED_F),
	F32(IB_PORT_EXT_EDR_FEC_MODE_SUPPORTED_F),
	F32(IB_PORT_EXT_EDR_FEC_MODE_ENABLED_F),
};
/* Declared with raw (non-BITSOFFS) offsets: kept apart because they land on
 * bytes of the fields above. */
static const struct fld port_ext_hdr_ndr[] = {
	F32(IB_PORT_EXT_HDR_FEC_MODE_SUPPORTED_F),
	F32(IB_PORT_EXT_HDR_FEC_MODE_ENABLED_F),
	F32(IB_PORT_EXT_NDR_FEC_MODE_SUPPORTED_F),
	F32(IB_PORT_EXT_NDR_FEC_MODE_ENABLED_F),
};

/* ---------------------------------------------------------------- PerfMgt */

static const struct fld pc[] = {
	F32(IB_PC_PORT_SELECT_F), F32(IB_PC_COUNTER_SELECT_F),
	F32(IB_PC_ERR_SYM_F), F32(IB_PC_LINK_RECOVERS_F),
	F32(IB_PC_LINK_DOWNED_F), F32(IB_PC_ERR_RCV_F),
	F32(IB_PC_ERR_PHYSRCV_F), F32(IB_PC_ERR_SWITCH_REL_F),
	F32(IB_PC_XMT_DISCARDS_F), F32(IB_PC_ERR_XMTCONSTR_F),
	F32(IB_PC_ERR_RCVCONSTR_F), F32(IB_PC_COUNTER_SELECT2_F),
	F32(IB_PC_ERR_LOCALINTEG_F), F32(IB_PC_ERR_EXCESS_OVR_F),
	F32(IB_PC_VL15_DROPPED_F), F32(IB_PC_XMT_BYTES_F),
	F32(IB_PC_RCV_BYTES_F), F32(IB_PC_XMT_PKTS_F), F32(IB_PC_RCV_PKTS_F),
	F32(IB_PC_XMT_WAIT_F),
};
/* Raw offset in libibmad: kept apart (lands on VL15Dropped's bytes). */
static const struct fld pc_qp1[] = { F32(IB_PC_QP1_DROP_F) };
static const struct fld pc_ext[] = {
	F32(IB_PC_EXT_PORT_SELECT_F), F32(IB_PC_EXT_COUNTER_SELECT_F),
	F32(IB_PC_EXT_COUNTER_SELECT2_F),
	F64(IB_PC_EXT_XMT_BYTES_F), F64(IB_PC_EXT_RCV_BYTES_F),
	F64(IB_PC_EXT_XMT_PKTS_F), F64(IB_PC_EXT_RCV_PKTS_F),
	F64(IB_PC_EXT_XMT_UPKTS_F), F64(IB_PC_EXT_RCV_UPKTS_F),
	F64(IB_PC_EXT_XMT_MPKTS_F), F64(IB_PC_EXT_RCV_MPKTS_F),
	F64(IB_PC_EXT_ERR_SYM_F), F64(IB_PC_EXT_LINK_RECOVERS_F),
	F64(IB_PC_EXT_LINK_DOWNED_F), F64(IB_PC_EXT_ERR_RCV_F),
	F64(IB_PC_EXT_ERR_PHYSRCV_F), F64(IB_PC_EXT_ERR_SWITCH_REL_F),
	F64(IB_PC_EXT_XMT_DISCARDS_F), F64(IB_PC_EXT_ERR_XMTCONSTR_F),
	F64(IB_PC_EXT_ERR_RCVCONSTR_F), F64(IB_PC_EXT_ERR_LOCALINTEG_F),
	F64(IB_PC_EXT_ERR_EXCESS_OVR_F), F64(IB_PC_EXT_VL15_DROPPED_F),
	F64(IB_PC_EXT_XMT_WAIT_F), F64(IB_PC_EXT_QP1_DROP_F),
};
static const struct fld pc_sel[] = {
	F32(IB_PC_PORT_SELECT_F), F32(IB_PC_COUNTER_SELECT_F),
};
static const struct fld pc_xmt_sl[] = {
	F32(IB_PC_XMT_DATA_SL0_F), F32(IB_PC_XMT_DATA_SL1_F),
	F32(IB_PC_XMT_DATA_SL2_F), F32(IB_PC_XMT_DATA_SL3_F),
	F32(IB_PC_XMT_DATA_SL4_F), F32(IB_PC_XMT_DATA_SL5_F),
	F32(IB_PC_XMT_DATA_SL6_F), F32(IB_PC_XMT_DATA_SL7_F),
	F32(IB_PC_XMT_DATA_SL8_F), F32(IB_PC_XMT_DATA_SL9_F),
	F32(IB_PC_XMT_DATA_SL10_F), F32(IB_PC_XMT_DATA_SL11_F),
	F32(IB_PC_XMT_DATA_SL12_F), F32(IB_PC_XMT_DATA_SL13_F),
	F32(IB_PC_XMT_DATA_SL14_F), F32(IB_PC_XMT_DATA_SL15_F),
};
static const struct fld pc_rcv_sl[] = {
	F32(IB_PC_RCV_DATA_SL0_F), F32(IB_PC_RCV_DATA_SL1_F),
	F32(IB_PC_RCV_DATA_SL2_F), F32(IB_PC_RCV_DATA_SL3_F),
	F32(IB_PC_RCV_DATA_SL4_F), F32(IB_PC_RCV_DATA_SL5_F),
	F32(IB_PC_RCV_DATA_SL6_F), F32(IB_PC_RCV_DATA_SL7_F),
	F32(IB_PC_RCV_DATA_SL8_F), F32(IB_PC_RCV_DATA_SL9_F),
	F32(IB_PC_RCV_DATA_SL10_F), F32(IB_PC_RCV_DATA_SL11_F),
	F32(IB_PC_RCV_DATA_SL12_F), F32(IB_PC_RCV_DATA_SL13_F),
	F32(IB_PC_RCV_DATA_SL14_F), F32(IB_PC_RCV_DATA_SL15_F),
};
static const struct fld pc_xmt_disc[] = {
	F32(IB_PC_XMT_INACT_DISC_F), F32(IB_PC_XMT_NEIGH_MTU_DISC_F),
	F32(IB_PC_XMT_SW_LIFE_DISC_F), F32(IB_PC_XMT_SW_HOL_DISC_F),
};
static const struct fld pc_rcv_err[] = {
	F32(IB_PC_RCV_LOCAL_PHY_ERR_F), F32(IB_PC_RCV_MALFORMED_PKT_ERR_F),
	F32(IB_PC_RCV_BUF_OVR_ERR_F), F32(IB_PC_RCV_DLID_MAP_ERR_F),
	F32(IB_PC_RCV_VL_MAP_ERR_F), F32(IB_PC_RCV_LOOPING_ERR_F),
};
static const struct fld psc[] = {
	F32(IB_PSC_OPCODE_F), F32(IB_PSC_PORT_SELECT_F), F32(IB_PSC_TICK_F),
	F32(IB_PSC_COUNTER_WIDTH_F), F32(IB_PSC_COUNTER_MASK0_F),
	F32(IB_PSC_COUNTER_MASKS1TO9_F), F32(IB_PSC_COUNTER_MASKS10TO14_F),
	F32(IB_PSC_SAMPLE_MECHS_F), F32(IB_PSC_SAMPLE_STATUS_F),
	F64(IB_PSC_OPTION_MASK_F), F64(IB_PSC_VENDOR_MASK_F),
	F32(IB_PSC_SAMPLE_START_F), F32(IB_PSC_SAMPLE_INTVL_F),
	F32(IB_PSC_TAG_F), F32(IB_PSC_COUNTER_SEL0_F), F32(IB_PSC_COUNTER_SEL1_F),
	F32(IB_PSC_COUNTER_SEL2_F), F32(IB_PSC_COUNTER_SEL3_F),
	F32(IB_PSC_COUNTER_SEL4_F), F32(IB_PSC_COUNTER_SEL5_F),
	F32(IB_PSC_COUNTER_SEL6_F), F32(IB_PSC_COUNTER_SEL7_F),
	F32(IB_PSC_COUNTER_SEL8_F), F32(IB_PSC_COUNTER_SEL9_F),
	F32(IB_PSC_COUNTER_SEL10_F), F32(IB_PSC_COUNTER_SEL11_F),
	F32(IB_PSC_COUNTER_SEL12_F), F32(IB_PSC_COUNTER_SEL13_F),
	F32(IB_PSC_COUNTER_SEL14_F), F64(IB_PSC_SAMPLES_ONLY_OPT_MASK_F),
};
static const struct fld psr[] = {
	F32(IB_PSR_TAG_F), F32(IB_PSR_SAMPLE_STATUS_F),
	F32(IB_PSR_COUNTER0_F), F32(IB_PSR_COUNTER1_F), F32(IB_PSR_COUNTER2_F),
	F32(IB_PSR_COUNTER3_F), F32(IB_PSR_COUNTER4_F), F32(IB_PSR_COUNTER5_F),
	F32(IB_PSR_COUNTER6_F), F32(IB_PSR_COUNTER7_F), F32(IB_PSR_COUNTER8_F),
	F32(IB_PSR_COUNTER9_F), F32(IB_PSR_COUNTER10_F), F32(IB_PSR_COUNTER11_F),
	F32(IB_PSR_COUNTER12_F), F32(IB_PSR_COUNTER13_F), F32(IB_PSR_COUNTER14_F),
};
static const struct fld pesc[] = {
	F32(IB_PESC_PORT_SELECT_F), F64(IB_PESC_COUNTER_SELECT_F),
	F32(IB_PESC_SYNC_HDR_ERR_CTR_F), F32(IB_PESC_UNK_BLOCK_CTR_F),
	F32(IB_PESC_ERR_DET_CTR_LANE0_F), F32(IB_PESC_ERR_DET_CTR_LANE1_F),
	F32(IB_PESC_ERR_DET_CTR_LANE2_F), F32(IB_PESC_ERR_DET_CTR_LANE3_F),
	F32(IB_PESC_ERR_DET_CTR_LANE4_F), F32(IB_PESC_ERR_DET_CTR_LANE5_F),
	F32(IB_PESC_ERR_DET_CTR_LANE6_F), F32(IB_PESC_ERR_DET_CTR_LANE7_F),
	F32(IB_PESC_ERR_DET_CTR_LANE8_F), F32(IB_PESC_ERR_DET_CTR_LANE9_F),
	F32(IB_PESC_ERR_DET_CTR_LANE10_F), F32(IB_PESC_ERR_DET_CTR_LANE11_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE0_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE1_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE2_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE3_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE4_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE5_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE6_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE7_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE8_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE9_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE10_F),
	F32(IB_PESC_FEC_CORR_BLOCK_CTR_LANE11_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE0_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE1_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE2_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE3_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE4_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE5_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE6_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE7_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE8_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE9_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE10_F),
	F32(IB_PESC_FEC_UNCORR_BLOCK_CTR_LANE11_F),
};
static const struct fld pesc_rsfec[] = {
	F32(IB_PESC_RSFEC_PORT_SELECT_F), F64(IB_PESC_RSFEC_COUNTER_SELECT_F),
	F32(IB_PESC_RSFEC_SYNC_HDR_ERR_CTR_F), F32(IB_PESC_RSFEC_UNK_BLOCK_CTR_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE0_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE1_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE2_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE3_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE4_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE5_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE6_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE7_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE8_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE9_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE10_F),
	F32(IB_PESC_RSFEC_FEC_CORR_SYMBOL_CTR_LANE11_F),
	F32(IB_PESC_PORT_FEC_CORR_BLOCK_CTR_F),
	F32(IB_PESC_PORT_FEC_UNCORR_BLOCK_CTR_F),
	F32(IB_PESC_PORT_FEC_CORR_SYMBOL_CTR_F),
};
static const struct fld pc_op_rcv[] = {
	F32(IB_PC_PORT_OP_RCV_PKTS_F), F32(IB_PC_PORT_OP_RCV_DATA_F),
};
static const struct fld pc_flow_ctl[] = {
	F32(IB_PC_PORT_XMIT_FLOW_PKTS_F), F32(IB_PC_PORT_RCV_FLOW_PKTS_F),
};
#define VL16(p) \
	F32(p##0_F), F32(p##1_F), F32(p##2_F), F32(p##3_F), F32(p##4_F), \
	F32(p##5_F), F32(p##6_F), F32(p##7_F), F32(p##8_F), F32(p##9_F), \
	F32(p##10_F), F32(p##11_F), F32(p##12_F), F32(p##13_F), F32(p##14_F)
static const struct fld pc_vl_op_packets[] = {
	VL16(IB_PC_PORT_VL_OP_PACKETS), F32(IB_PC_PORT_VL_OP_PACKETS15_F),
};
static const struct fld pc_vl_op_data[] = {
	VL16(IB_PC_PORT_VL_OP_DATA), F32(IB_PC_PORT_VL_OP_DATA15_F),
};
static const struct fld pc_vl_xmit_flow_ctl[] = {
	VL16(IB_PC_PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS),
	F32(IB_PC_PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS15_F),
};
static const struct fld pc_vl_xmit_wait[] = {
	VL16(IB_PC_PORT_VL_XMIT_WAIT), F32(IB_PC_PORT_VL_XMIT_WAIT15_F),
};
static const struct fld pc_sw_port_vl_cong[] = {
	VL16(IB_PC_SW_PORT_VL_CONGESTION),
	F32(IB_PC_SW_PORT_VL_CONGESTION15_F),
};
static const struct fld pc_rcv_con_ctrl[] = {
	F32(IB_PC_RCV_CON_CTRL_PKT_RCV_FECN_F),
	F32(IB_PC_RCV_CON_CTRL_PKT_RCV_BECN_F),
};
static const struct fld pc_sl_rcv_fecn[] = {
	VL16(IB_PC_SL_RCV_FECN), F32(IB_PC_SL_RCV_FECN15_F),
};
static const struct fld pc_sl_rcv_becn[] = {
	VL16(IB_PC_SL_RCV_BECN), F32(IB_PC_SL_RCV_BECN15_F),
};
static const struct fld pc_xmit_con_ctrl[] = {
	F32(IB_PC_XMIT_CON_CTRL_TIME_CONG_F),
};
/* PortVLXmitTimeCong has 15 entries (VL0-14). */
static const struct fld pc_vl_xmit_time_cong[] = {
	VL16(IB_PC_VL_XMIT_TIME_CONG),
};

/* --------------------------------------------------- congestion control */

static const struct fld cc_info[] = {
	F32(IB_CC_CONGESTION_INFO_F),
	F32(IB_CC_CONGESTION_INFO_CONTROL_TABLE_CAP_F),
};
static const struct fld cc_key_info[] = {
	F64(IB_CC_CONGESTION_KEY_INFO_CC_KEY_F),
	F32(IB_CC_CONGESTION_KEY_INFO_CC_KEY_PROTECT_BIT_F),
	F32(IB_CC_CONGESTION_KEY_INFO_CC_KEY_LEASE_PERIOD_F),
	F32(IB_CC_CONGESTION_KEY_INFO_CC_KEY_VIOLATIONS_F),
};
static const struct fld cc_log_switch[] = {
	F32(IB_CC_CONGESTION_LOG_LOGTYPE_F),
	F32(IB_CC_CONGESTION_LOG_CONGESTION_FLAGS_F),
	F32(IB_CC_CONGESTION_LOG_SWITCH_LOG_EVENTS_COUNTER_F),
	F32(IB_CC_CONGESTION_LOG_SWITCH_CURRENT_TIME_STAMP_F),
	FARR(IB_CC_CONGESTION_LOG_SWITCH_PORTMAP_F),
};
static const struct fld cc_log_entry_switch[] = {
	F32(IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SLID_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_SWITCH_DLID_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_SWITCH_SL_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_SWITCH_TIMESTAMP_F),
};
static const struct fld cc_log_ca[] = {
	F32(IB_CC_CONGESTION_LOG_LOGTYPE_F),
	F32(IB_CC_CONGESTION_LOG_CONGESTION_FLAGS_F),
	F32(IB_CC_CONGESTION_LOG_CA_THRESHOLD_EVENT_COUNTER_F),
	F32(IB_CC_CONGESTION_LOG_CA_THRESHOLD_CONGESTION_EVENT_MAP_F),
	F32(IB_CC_CONGESTION_LOG_CA_CURRENT_TIMESTAMP_F),
};
static const struct fld cc_log_entry_ca[] = {
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_QP_CN_ENTRY_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_SL_CN_ENTRY_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_SERVICE_TYPE_CN_ENTRY_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_QP_NUMBER_CN_ENTRY_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_LOCAL_LID_CN_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_REMOTE_LID_CN_ENTRY_F),
	F32(IB_CC_CONGESTION_LOG_ENTRY_CA_TIMESTAMP_CN_ENTRY_F),
};
static const struct fld cc_sw_setting[] = {
	F32(IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F),
	FARR(IB_CC_SWITCH_CONGESTION_SETTING_VICTIM_MASK_F),
	FARR(IB_CC_SWITCH_CONGESTION_SETTING_CREDIT_MASK_F),
	F32(IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F),
	F32(IB_CC_SWITCH_CONGESTION_SETTING_PACKET_SIZE_F),
	F32(IB_CC_SWITCH_CONGESTION_SETTING_CS_THRESHOLD_F),
	F32(IB_CC_SWITCH_CONGESTION_SETTING_CS_RETURN_DELAY_F),
	F32(IB_CC_SWITCH_CONGESTION_SETTING_MARKING_RATE_F),
};
static const struct fld cc_sw_port_setting[] = {
	F32(IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_VALID_F),
	F32(IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONTROL_TYPE_F),
	F32(IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_THRESHOLD_F),
	F32(IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_PACKET_SIZE_F),
	F32(IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONG_PARM_MARKING_RATE_F),
};
static const struct fld cc_ca_setting[] = {
	F32(IB_CC_CA_CONGESTION_SETTING_PORT_CONTROL_F),
	F32(IB_CC_CA_CONGESTION_SETTING_CONTROL_MAP_F),
};
static const struct fld cc_ca_entry[] = {
	F32(IB_CC_CA_CONGESTION_ENTRY_CCTI_TIMER_F),
	F32(IB_CC_CA_CONGESTION_ENTRY_CCTI_INCREASE_F),
	F32(IB_CC_CA_CONGESTION_ENTRY_TRIGGER_THRESHOLD_F),
	F32(IB_CC_CA_CONGESTION_ENTRY_CCTI_MIN_F),
};
static const struct fld cc_cct[] = {
	F32(IB_CC_CONGESTION_CONTROL_TABLE_CCTI_LIMIT_F),
};
static const struct fld cc_cct_entry[] = {
	F32(IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_SHIFT_F),
	F32(IB_CC_CONGESTION_CONTROL_TABLE_ENTRY_CCT_MULTIPLIER_F),
};
static const struct fld cc_timestamp[] = { F32(IB_CC_TIMESTAMP_F) };

/* ------------------------------------------------------------ SA records */

static const struct fld node_record[] = {
	F32(IB_SA_NR_LID_F), F32(IB_SA_NR_BASEVER_F), F32(IB_SA_NR_CLASSVER_F),
	F32(IB_SA_NR_TYPE_F), F32(IB_SA_NR_NPORTS_F),
	F64(IB_SA_NR_SYSTEM_GUID_F), F64(IB_SA_NR_GUID_F),
	F64(IB_SA_NR_PORT_GUID_F), F32(IB_SA_NR_PARTITION_CAP_F),
	F32(IB_SA_NR_DEVID_F), F32(IB_SA_NR_REVISION_F),
	F32(IB_SA_NR_LOCAL_PORT_F), F32(IB_SA_NR_VENDORID_F),
	FARR(IB_SA_NR_NODEDESC_F),
};
static const struct fld path_record[] = {
	FARR(IB_SA_PR_DGID_F), FARR(IB_SA_PR_SGID_F), F32(IB_SA_PR_DLID_F),
	F32(IB_SA_PR_SLID_F), F32(IB_SA_PR_NPATH_F), F32(IB_SA_PR_SL_F),
};
/* The generic GID halves, applied to PathRecord.DGID (record byte 8). */
static const struct fld path_record_gid[] = {
	F64X(IB_GID_PREFIX_F, 8), F64X(IB_GID_GUID_F, 8),
};
static const struct fld mcm_record[] = {
	FARR(IB_SA_MCM_MGID_F), FARR(IB_SA_MCM_PORTGID_F), F32(IB_SA_MCM_QKEY_F),
	F32(IB_SA_MCM_MLID_F), F32(IB_SA_MCM_SL_F), F32(IB_SA_MCM_MTU_F),
	F32(IB_SA_MCM_RATE_F), F32(IB_SA_MCM_TCLASS_F), F32(IB_SA_MCM_PKEY_F),
	F32(IB_SA_MCM_FLOW_LABEL_F), F32(IB_SA_MCM_JOIN_STATE_F),
	F32(IB_SA_MCM_PROXY_JOIN_F),
};
static const struct fld service_record[] = {
	F64(IB_SA_SR_ID_F), FARR(IB_SA_SR_GID_F), F32(IB_SA_SR_PKEY_F),
	F32(IB_SA_SR_LEASE_F), FARR(IB_SA_SR_KEY_F), FARR(IB_SA_SR_NAME_F),
	FARR(IB_SA_SR_DATA_F),
};
/* ATS fields are relative to ServiceData (record byte 112). */
static const struct fld service_record_ats[] = {
	F32X(IB_ATS_SM_NODE_ADDR_F, 112), F32X(IB_ATS_SM_MAGIC_KEY_F, 112),
	F32X(IB_ATS_SM_NODE_TYPE_F, 112), FARRX(IB_ATS_SM_NODE_NAME_F, 112),
};
static const struct fld guidinfo_record[] = {
	F32(IB_SA_GIR_LID_F), F32(IB_SA_GIR_BLOCKNUM_F),
	F64(IB_SA_GIR_GUID0_F), F64(IB_SA_GIR_GUID1_F), F64(IB_SA_GIR_GUID2_F),
	F64(IB_SA_GIR_GUID3_F), F64(IB_SA_GIR_GUID4_F), F64(IB_SA_GIR_GUID5_F),
	F64(IB_SA_GIR_GUID6_F), F64(IB_SA_GIR_GUID7_F),
};
static const struct fld multipath_record[] = {
	F32(IB_SA_MP_NPATH_F), F32(IB_SA_MP_NSRC_F), F32(IB_SA_MP_NDEST_F),
	FARR(IB_SA_MP_GID0_F),
};

/* ---------------------------------------------------------------- buffers */

#define SMP_DATA 64
#define GS_DATA 64
#define SA_DATA 56

static const struct part b_smp[] = {
	PART("MadHeader", 0, mad_common), PART("SmpHeader", 0, smp_lid),
};
static const struct part b_dr_smp[] = { PART("DrSmpHeader", 0, smp_dr) };
static const struct part b_sa[] = {
	PART("MadHeader", 0, mad_common), PART("RmppHeader", 0, rmpp_data),
	PART("SaHeader", 0, sa_hdr),
};
static const struct part b_sa_data[] = {
	PART("MadHeader", 0, mad_common), PART("SaHeader", 0, sa_hdr),
	PART("SaData", 0, sa_data),
};
static const struct part b_rmpp_ack[] = { PART("RmppHeader", 0, rmpp_ack) };
static const struct part b_rmpp_raw[] = { PART("RmppHeader", 0, rmpp_raw) };
static const struct part b_perf_data[] = {
	PART("MadHeader", 0, mad_common), PART("GsData", 0, gs_data),
};
static const struct part b_vendor2[] = {
	PART("MadHeader", 0, mad_common), PART("RmppHeader", 0, rmpp_data),
	PART("Vendor2Header", 0, vend2_hdr),
};
static const struct part b_vendor2_data[] = {
	PART("MadHeader", 0, mad_common), PART("Vendor2Header", 0, vend2_hdr),
	PART("Vendor2Data", 0, vend2_data),
};
static const struct part b_cc[] = {
	PART("MadHeader", 0, mad_common), PART("CcHeader", 0, cc_hdr),
};
static const struct part b_node_info[] = { PART("NodeInfo", SMP_DATA, node_info) };
static const struct part b_node_desc[] = { PART("NodeDesc", SMP_DATA, node_desc) };
static const struct part b_port_info[] = { PART("PortInfo", SMP_DATA, port_info) };
static const struct part b_switch_info[] = { PART("SwitchInfo", SMP_DATA, switch_info) };
static const struct part b_guid_info[] = { PART("GuidInfo", SMP_DATA, guid_info) };
static const struct part b_guid_info_compat[] = { PART("GuidInfo", SMP_DATA, guid_info_compat) };
static const struct part b_sl2vl[] = { PART("SlToVlTable", SMP_DATA, sl2vl) };
static const struct part b_vlarb[] = { PART("VlArbTable", SMP_DATA, vlarb) };
static const struct part b_lft[] = { PART("LinearFwdTable", SMP_DATA, lft) };
static const struct part b_mft[] = { PART("MulticastFwdTable", SMP_DATA, mft) };
static const struct part b_sm_info[] = { PART("SmInfo", SMP_DATA, sm_info) };
static const struct part b_notice[] = { PART("Notice", SMP_DATA, notice) };
static const struct part b_notice_traps[] = { PART("Notice", SMP_DATA, notice_traps) };
static const struct part b_cpi[] = { PART("ClassPortInfo", GS_DATA, cpi) };
static const struct part b_mlnx_ext_port[] = { PART("MlnxExtPortInfo", SMP_DATA, mlnx_ext_port) };
static const struct part b_port_ext[] = { PART("PortInfoExtended", SMP_DATA, port_ext) };
static const struct part b_port_ext_hdr_ndr[] = { PART("PortInfoExtended", SMP_DATA, port_ext_hdr_ndr) };
static const struct part b_pc[] = { PART("PortCounters", GS_DATA, pc) };
static const struct part b_pc_qp1[] = { PART("PortCounters", GS_DATA, pc_qp1) };
static const struct part b_pc_ext[] = { PART("PortCountersExt", GS_DATA, pc_ext) };
static const struct part b_pc_xmt_sl[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortXmitDataSL", GS_DATA, pc_xmt_sl),
};
static const struct part b_pc_rcv_sl[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortRcvDataSL", GS_DATA, pc_rcv_sl),
};
static const struct part b_pc_xmt_disc[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortXmitDiscardDetails", GS_DATA, pc_xmt_disc),
};
static const struct part b_pc_rcv_err[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortRcvErrorDetails", GS_DATA, pc_rcv_err),
};
static const struct part b_psc[] = { PART("PortSamplesControl", GS_DATA, psc) };
static const struct part b_psr[] = { PART("PortSamplesResult", GS_DATA, psr) };
static const struct part b_pesc[] = { PART("PortExtendedSpeedsCounters", GS_DATA, pesc) };
static const struct part b_pesc_rsfec[] = { PART("PortExtendedSpeedsCountersRsfec", GS_DATA, pesc_rsfec) };
static const struct part b_pc_op_rcv[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortOpRcvCounters", GS_DATA, pc_op_rcv),
};
static const struct part b_pc_flow_ctl[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortFlowCtlCounters", GS_DATA, pc_flow_ctl),
};
static const struct part b_pc_vl_op_packets[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortVLOpPackets", GS_DATA, pc_vl_op_packets),
};
static const struct part b_pc_vl_op_data[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortVLOpData", GS_DATA, pc_vl_op_data),
};
static const struct part b_pc_vl_xmit_flow_ctl[] = {
	PART("PortCounters", GS_DATA, pc_sel),
	PART("PortVLXmitFlowCtlUpdateErrors", GS_DATA, pc_vl_xmit_flow_ctl),
};
static const struct part b_pc_vl_xmit_wait[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortVLXmitWaitCounters", GS_DATA, pc_vl_xmit_wait),
};
static const struct part b_pc_sw_port_vl_cong[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("SwPortVLCongestion", GS_DATA, pc_sw_port_vl_cong),
};
static const struct part b_pc_rcv_con_ctrl[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortRcvConCtrl", GS_DATA, pc_rcv_con_ctrl),
};
static const struct part b_pc_sl_rcv_fecn[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortSLRcvFECN", GS_DATA, pc_sl_rcv_fecn),
};
static const struct part b_pc_sl_rcv_becn[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortSLRcvBECN", GS_DATA, pc_sl_rcv_becn),
};
static const struct part b_pc_xmit_con_ctrl[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortXmitConCtrl", GS_DATA, pc_xmit_con_ctrl),
};
static const struct part b_pc_vl_xmit_time_cong[] = {
	PART("PortCounters", GS_DATA, pc_sel), PART("PortVLXmitTimeCong", GS_DATA, pc_vl_xmit_time_cong),
};
static const struct part b_cc_info[] = { PART("CongestionInfo", GS_DATA, cc_info) };
static const struct part b_cc_key_info[] = { PART("CongestionKeyInfo", GS_DATA, cc_key_info) };
static const struct part b_cc_log_switch[] = { PART("CongestionLogSwitch", GS_DATA, cc_log_switch) };
static const struct part b_cc_log_entry_switch[] = { PART("CongestionLogEventSwitch", GS_DATA, cc_log_entry_switch) };
static const struct part b_cc_log_ca[] = { PART("CongestionLogCa", GS_DATA, cc_log_ca) };
static const struct part b_cc_log_entry_ca[] = { PART("CongestionLogEventCa", GS_DATA, cc_log_entry_ca) };
static const struct part b_cc_sw_setting[] = { PART("SwitchCongestionSetting", GS_DATA, cc_sw_setting) };
static const struct part b_cc_sw_port_setting[] = { PART("SwitchPortCongestionSettingElement", GS_DATA, cc_sw_port_setting) };
static const struct part b_cc_ca_setting[] = { PART("CaCongestionSetting", GS_DATA, cc_ca_setting) };
static const struct part b_cc_ca_entry[] = { PART("CaCongestionEntry", GS_DATA, cc_ca_entry) };
static const struct part b_cc_cct[] = { PART("CongestionControlTable", GS_DATA, cc_cct) };
static const struct part b_cc_cct_entry[] = { PART("CongestionControlTableEntry", GS_DATA, cc_cct_entry) };
static const struct part b_cc_timestamp[] = { PART("Timestamp", GS_DATA, cc_timestamp) };
static const struct part b_node_record[] = { PART("NodeRecord", SA_DATA, node_record) };
static const struct part b_path_record[] = { PART("PathRecord", SA_DATA, path_record) };
static const struct part b_path_record_gid[] = { PART("PathRecord", SA_DATA, path_record_gid) };
static const struct part b_mcm_record[] = { PART("McMemberRecord", SA_DATA, mcm_record) };
static const struct part b_service_record[] = { PART("ServiceRecord", SA_DATA, service_record) };
static const struct part b_service_record_ats[] = { PART("ServiceRecord", SA_DATA, service_record_ats) };
static const struct part b_guidinfo_record[] = { PART("GuidInfoRecord", SA_DATA, guidinfo_record) };
/* Records that embed an SMP attribute: libibmad's attribute fields at the
 * attribute's offset inside the record (as saquery decodes them). */
static const struct part b_port_info_record[] = { PART("PortInfoRecord", SA_DATA + 4, port_info) };
static const struct part b_switch_info_record[] = { PART("SwitchInfoRecord", SA_DATA + 4, switch_info) };
static const struct part b_sm_info_record[] = { PART("SmInfoRecord", SA_DATA + 4, sm_info) };
static const struct part b_lft_record[] = { PART("LftRecord", SA_DATA + 8, lft) };
static const struct part b_mft_record[] = { PART("MftRecord", SA_DATA + 8, mft) };
static const struct part b_sl2vl_record[] = { PART("Sl2VlRecord", SA_DATA + 8, sl2vl) };
static const struct part b_vlarb_record[] = { PART("VlArbRecord", SA_DATA + 8, vlarb) };
static const struct part b_multipath_record[] = { PART("MultiPathRecord", SA_DATA, multipath_record) };

static const struct buffer buffers[] = {
	BUF("smp_lid_routed", b_smp),
	BUF("smp_directed_route", b_dr_smp),
	BUF("sa_rmpp_data", b_sa),
	BUF("sa_raw_data", b_sa_data),
	BUF("rmpp_ack", b_rmpp_ack),
	BUF("rmpp_raw_data_words", b_rmpp_raw),
	BUF("perf_raw_data", b_perf_data),
	BUF("vendor_range2", b_vendor2),
	BUF("vendor_range2_raw_data", b_vendor2_data),
	BUF("cc_header", b_cc),
	BUF("smp_node_info", b_node_info),
	BUF("smp_node_desc", b_node_desc),
	BUF("smp_port_info", b_port_info),
	BUF("smp_switch_info", b_switch_info),
	BUF("smp_guid_info", b_guid_info),
	BUF("smp_guid_info_compat_alias", b_guid_info_compat),
	BUF("smp_sl2vl", b_sl2vl),
	BUF("smp_vlarb", b_vlarb),
	BUF("smp_lft", b_lft),
	BUF("smp_mft", b_mft),
	BUF("smp_sm_info", b_sm_info),
	BUF("smp_notice", b_notice),
	BUF("smp_notice_trap_details", b_notice_traps),
	BUF("gs_class_port_info", b_cpi),
	BUF("smp_mlnx_ext_port_info", b_mlnx_ext_port),
	BUF("smp_port_info_ext", b_port_ext),
	BUF("smp_port_info_ext_hdr_ndr", b_port_ext_hdr_ndr),
	BUF("perf_port_counters", b_pc),
	BUF("perf_port_counters_qp1_dropped", b_pc_qp1),
	BUF("perf_port_counters_ext", b_pc_ext),
	BUF("perf_xmit_data_sl", b_pc_xmt_sl),
	BUF("perf_rcv_data_sl", b_pc_rcv_sl),
	BUF("perf_xmit_discard_details", b_pc_xmt_disc),
	BUF("perf_rcv_error_details", b_pc_rcv_err),
	BUF("perf_samples_control", b_psc),
	BUF("perf_samples_result", b_psr),
	BUF("perf_ext_speeds_counters", b_pesc),
	BUF("perf_ext_speeds_counters_rsfec", b_pesc_rsfec),
	BUF("perf_op_rcv_counters", b_pc_op_rcv),
	BUF("perf_flow_ctl_counters", b_pc_flow_ctl),
	BUF("perf_vl_op_packets", b_pc_vl_op_packets),
	BUF("perf_vl_op_data", b_pc_vl_op_data),
	BUF("perf_vl_xmit_flow_ctl_update_errors", b_pc_vl_xmit_flow_ctl),
	BUF("perf_vl_xmit_wait", b_pc_vl_xmit_wait),
	BUF("perf_sw_port_vl_congestion", b_pc_sw_port_vl_cong),
	BUF("perf_rcv_con_ctrl", b_pc_rcv_con_ctrl),
	BUF("perf_sl_rcv_fecn", b_pc_sl_rcv_fecn),
	BUF("perf_sl_rcv_becn", b_pc_sl_rcv_becn),
	BUF("perf_xmit_con_ctrl", b_pc_xmit_con_ctrl),
	BUF("perf_vl_xmit_time_cong", b_pc_vl_xmit_time_cong),
	BUF("cc_congestion_info", b_cc_info),
	BUF("cc_congestion_key_info", b_cc_key_info),
	BUF("cc_congestion_log_switch", b_cc_log_switch),
	BUF("cc_congestion_log_event_switch", b_cc_log_entry_switch),
	BUF("cc_congestion_log_ca", b_cc_log_ca),
	BUF("cc_congestion_log_event_ca", b_cc_log_entry_ca),
	BUF("cc_switch_congestion_setting", b_cc_sw_setting),
	BUF("cc_switch_port_congestion_setting", b_cc_sw_port_setting),
	BUF("cc_ca_congestion_setting", b_cc_ca_setting),
	BUF("cc_ca_congestion_entry", b_cc_ca_entry),
	BUF("cc_congestion_control_table", b_cc_cct),
	BUF("cc_congestion_control_table_entry", b_cc_cct_entry),
	BUF("cc_timestamp", b_cc_timestamp),
	BUF("sa_node_record", b_node_record),
	BUF("sa_path_record", b_path_record),
	BUF("sa_path_record_gid_halves", b_path_record_gid),
	BUF("sa_mcmember_record", b_mcm_record),
	BUF("sa_service_record", b_service_record),
	BUF("sa_service_record_ats", b_service_record_ats),
	BUF("sa_guidinfo_record", b_guidinfo_record),
	BUF("sa_multipath_record", b_multipath_record),
	BUF("sa_port_info_record", b_port_info_record),
	BUF("sa_switch_info_record", b_switch_info_record),
	BUF("sa_sm_info_record", b_sm_info_record),
	BUF("sa_lft_record", b_lft_record),
	BUF("sa_mft_record", b_mft_record),
	BUF("sa_sl2vl_record", b_sl2vl_record),
	BUF("sa_vlarb_record", b_vlarb_record),
};

/* ------------------------------------------------------------------ logic */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

struct probe {
	int off;    /* first bit, MSB-first from the part base */
	int len;    /* number of bits set */
	int contig; /* 1 if the bits form one run */
	int bytes;  /* arr: number of bytes copied */
	uint32_t mask; /* u32: libibmad's width mask */
};

static int bit_at(const uint8_t *b, int i)
{
	return (b[i / 8] >> (7 - i % 8)) & 1;
}

static uint8_t ones[2 * MAD_SIZE];

static struct probe probe_field(const struct part *p, const struct fld *f)
{
	uint8_t buf[2 * MAD_SIZE];
	struct probe r = { -1, 0, 1, 0, 0 };
	int base = p->base + f->extra, last = -1, i;

	memset(buf, 0, sizeof buf);
	switch (f->k) {
	case K32:
		r.mask = mad_get_field(ones, base, f->f);
		mad_set_field(buf, base, f->f, r.mask);
		break;
	case K64:
		mad_set_field64(buf, base, f->f, ~0ull);
		break;
	case KARR:
		mad_set_array(buf, base, f->f, ones);
		break;
	}
	for (i = 0; i < 2 * MAD_SIZE * 8; i++) {
		if (!bit_at(buf, i))
			continue;
		if (r.off < 0)
			r.off = i;
		else if (i != last + 1)
			r.contig = 0;
		last = i;
		r.len++;
	}
	r.bytes = r.len / 8;
	if (r.off >= 0)
		r.off -= p->base * 8;
	return r;
}

/* Bits outside the field that mad_set_field(0xffffffff) changes. */
static int spill_bits(const struct part *p, const struct fld *f, const struct probe *q)
{
	uint8_t buf[2 * MAD_SIZE];
	int i, n = 0, start = p->base * 8 + q->off;

	memset(buf, 0, sizeof buf);
	mad_set_field(buf, p->base + f->extra, f->f, 0xffffffffu);
	for (i = 0; i < 2 * MAD_SIZE * 8; i++)
		if (bit_at(buf, i) && (i < start || i >= start + q->len))
			n++;
	return n;
}

static int popcount32(uint32_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

#define MAX_FIELDS 128

struct val {
	uint64_t v;
	uint8_t a[MAD_SIZE];
};

static int seen_value(const struct val *vals, int n, uint64_t v)
{
	int i;
	for (i = 0; i < n; i++)
		if (vals[i].v == v)
			return 1;
	return 0;
}

static void print_hex(const uint8_t *b, int n)
{
	int i;
	for (i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static int run_buffer(const struct buffer *b, int round)
{
	uint8_t mad[2 * MAD_SIZE];
	struct val vals[MAX_FIELDS];
	struct probe pr[MAX_FIELDS];
	int nv = 0, pi, fi, ok = 1;

	memset(mad, 0, sizeof mad);
	printf("buffer %s %d\n", b->name, round);
	for (pi = 0; pi < b->n; pi++)
		printf("part %s %d\n", b->parts[pi].group, b->parts[pi].base);

	/* Fill every field with libibmad's setters. */
	for (pi = 0; pi < b->n; pi++) {
		const struct part *p = &b->parts[pi];
		for (fi = 0; fi < p->n; fi++) {
			const struct fld *f = &p->fields[fi];
			struct val *v = &vals[nv];
			int base = p->base + f->extra, tries;

			if (nv >= MAX_FIELDS) {
				fprintf(stderr, "too many fields in %s\n", b->name);
				exit(2);
			}
			pr[nv] = probe_field(p, f);
			memset(v, 0, sizeof *v);
			switch (f->k) {
			case K32:
				if (round == 0) {
					v->v = pr[nv].mask;
				} else {
					for (tries = 0; tries < 64; tries++) {
						v->v = rnd() & pr[nv].mask;
						if (!seen_value(vals, nv, v->v))
							break;
					}
				}
				mad_set_field(mad, base, f->f, (uint32_t)v->v);
				break;
			case K64:
				if (round == 0) {
					v->v = ~0ull;
				} else {
					do
						v->v = rnd();
					while (seen_value(vals, nv, v->v));
				}
				mad_set_field64(mad, base, f->f, v->v);
				break;
			case KARR: {
				int i;
				for (i = 0; i < pr[nv].bytes; i++)
					v->a[i] = round == 0 ? 0xff : (uint8_t)rnd();
				v->v = ~0ull; /* not an integer */
				mad_set_array(mad, base, f->f, v->a);
				break;
			}
			}
			nv++;
		}
	}

	/* Read every field back and report the layout. */
	nv = 0;
	for (pi = 0; pi < b->n; pi++) {
		const struct part *p = &b->parts[pi];
		for (fi = 0; fi < p->n; fi++, nv++) {
			const struct fld *f = &p->fields[fi];
			const struct val *v = &vals[nv];
			const struct probe *q = &pr[nv];
			int base = p->base + f->extra;
			const char *kind = f->k == K32 ? "u32" : f->k == K64 ? "u64" : "arr";

			if (!q->contig)
				printf("quirk noncontiguous %s %s\n", p->group, f->ename);
			if (round == 0 && f->k == K32) {
				int n = spill_bits(p, f, q);
				if (n)
					printf("spill %s %s %d\n", p->group, f->ename, n);
			}
			if (f->k == K32 && q->mask != (q->len >= 32 ? 0xffffffffu : (1u << q->len) - 1))
				printf("quirk getter-width %s %s mask=0x%x bits=%d\n",
				       p->group, f->ename, q->mask, q->len);
			if (f->k == K32 && popcount32(q->mask) != q->len)
				printf("quirk setter-width %s %s\n", p->group, f->ename);
			printf("field %s %s %s %s %d %d ", p->group, f->ename,
			       mad_field_name(f->f), kind, q->off, q->len);
			switch (f->k) {
			case K32: {
				uint32_t got = mad_get_field(mad, base, f->f);
				printf("0x%llx\n", (unsigned long long)v->v);
				if (got != (uint32_t)v->v) {
					printf("quirk readback %s %s wrote=0x%llx read=0x%x\n",
					       p->group, f->ename,
					       (unsigned long long)v->v, got);
					ok = 0;
				}
				break;
			}
			case K64: {
				uint64_t got = mad_get_field64(mad, base, f->f);
				printf("0x%llx\n", (unsigned long long)v->v);
				if (got != v->v) {
					printf("quirk readback %s %s wrote=0x%llx read=0x%llx\n",
					       p->group, f->ename,
					       (unsigned long long)v->v,
					       (unsigned long long)got);
					ok = 0;
				}
				break;
			}
			case KARR: {
				uint8_t got[MAD_SIZE];
				print_hex(v->a, q->bytes);
				printf("\n");
				mad_get_array(mad, base, f->f, got);
				if (memcmp(got, v->a, q->bytes)) {
					printf("quirk readback %s %s\n", p->group, f->ename);
					ok = 0;
				}
				break;
			}
			}
		}
	}
	{
		int i, spill = 0;
		for (i = MAD_SIZE; i < 2 * MAD_SIZE; i++)
			spill |= mad[i];
		if (spill)
			printf("quirk beyond-256-bytes %s\n", b->name);
	}
	printf("bytes ");
	print_hex(mad, MAD_SIZE);
	printf("\nend\n");
	return ok;
}

static int covered(enum MAD_FIELDS f)
{
	size_t bi;
	int pi, fi;
	for (bi = 0; bi < sizeof buffers / sizeof buffers[0]; bi++)
		for (pi = 0; pi < buffers[bi].n; pi++)
			for (fi = 0; fi < buffers[bi].parts[pi].n; fi++)
				if (buffers[bi].parts[pi].fields[fi].f == f)
					return 1;
	return 0;
}

int main(void)
{
	size_t bi;
	int f, round, missing = 0;

	memset(ones, 0xff, sizeof ones);

	/* Every named field of this libibmad must be exercised. */
	for (f = IB_NO_FIELD + 1; f < IB_FIELD_LAST_; f++) {
		const char *name = mad_field_name((enum MAD_FIELDS)f);
		if (!name || !*name)
			continue; /* FIRST/LAST markers and IB_SM_DATA_F */
		if (!covered((enum MAD_FIELDS)f)) {
			fprintf(stderr, "libibmad field #%d (%s) is in no buffer\n", f, name);
			missing++;
		}
	}
	if (missing) {
		fprintf(stderr, "%d libibmad fields not covered: extend libibmad_fields.c\n",
			missing);
		return 3;
	}
	printf("fields %d\n", (int)IB_FIELD_LAST_);
	for (round = 0; round < ROUNDS; round++)
		for (bi = 0; bi < sizeof buffers / sizeof buffers[0]; bi++)
			run_buffer(&buffers[bi], round);
	return 0;
}
