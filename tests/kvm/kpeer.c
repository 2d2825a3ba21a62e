/*
 * kpeer: the Linux kernel's own RMPP (mad_rmpp.c), driven through libibumad,
 * as the peer of madstack's real-kernel tests. Its agents register with
 * rmpp_version 1, so the kernel segments, windows, ACKs and reassembles.
 *
 * Vendor range-2 class 0x30, class version 1, OUI 00:14:05, attribute 0xff10;
 * requests are Set (0x02), answers GetResp (0x81). Data byte i of a message
 * is kpat(i), the same pattern madstack's kernel_peer example uses.
 *
 *   kpeer recv CA LEN COUNT reply|noreply SECS
 *       receive COUNT messages of LEN data bytes (checked byte for byte);
 *       with 'reply' answer each with one GetResp (RMPP inactive)
 *   kpeer send CA DGID LEN COUNT TIMEOUT_MS
 *       send COUNT messages of LEN data bytes to DGID (port 1, QP1) and wait
 *       for each one's response (timeouts above 2000 ms: with 0 < t <= 2000
 *       the 6.1 kernel can miss a timeout in a multi-window send)
 *   kpeer hold CA SECS
 *       own class 0x30 / Set on CA port 1 for SECS seconds
 *
 * Prints "KPEER ready" once its agent is registered, "KPEER ok ..." per
 * message, and exits 0 only if every message passed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/umad.h>

enum { CLASS = 0x30, CLASS_VERSION = 1, SET = 0x02, GETRESP = 0x81, HDR = 40 };
static uint8_t oui[3] = { 0x00, 0x14, 0x05 };

static uint8_t kpat(size_t i) { return (uint8_t)(i * 13 + 5 + (i >> 9)); }

static int fd = -1, agent = -1;

static void die(const char *what, int rc)
{
	printf("KPEER fail %s (%d: %s)\n", what, rc, strerror(rc < 0 ? -rc : rc));
	fflush(stdout);
	exit(1);
}

static void open_port(const char *ca, int rmpp_version, int want_set)
{
	long mask[16 / sizeof(long)] = { 0 };
	if (umad_init() < 0)
		die("umad_init", errno);
	fd = umad_open_port(ca, 1);
	if (fd < 0)
		die("umad_open_port", fd);
	if (want_set)
		mask[0] = 1L << SET;
	agent = umad_register_oui(fd, CLASS, rmpp_version, oui, want_set ? mask : NULL);
	if (agent < 0)
		die("umad_register_oui", agent);
	printf("KPEER ready agent %d\n", agent);
	fflush(stdout);
}

static void put_header(uint8_t *m, uint8_t method, uint64_t tid_be, int rmpp_active)
{
	m[0] = 1;
	m[1] = CLASS;
	m[2] = CLASS_VERSION;
	m[3] = method;
	memcpy(m + 8, &tid_be, 8);
	m[16] = 0xff;
	m[17] = 0x10;
	m[24] = 1;                          /* RMPP version */
	m[25] = 1;                          /* DATA */
	m[26] = rmpp_active ? 1 : 0;        /* RRespTime 0, flags ACTIVE */
	memcpy(m + 37, oui, 3);
}

static int do_recv(const char *ca, size_t len, int count, int reply, int secs)
{
	size_t cap = HDR + len + 4096;
	void *umad = calloc(1, umad_size() + cap);
	int ok = 0;
	open_port(ca, 1, 1);
	for (int n = 0; n < count; n++) {
		int l = (int)cap;
		int rc = umad_recv(fd, umad, &l, secs * 1000);
		if (rc < 0)
			die("umad_recv", rc);
		uint8_t *m = umad_get_mad(umad);
		if (umad_status(umad)) {
			printf("KPEER bad message %d: umad status %d\n", n, umad_status(umad));
			continue;
		}
		size_t got = (size_t)l > HDR ? (size_t)l - HDR : 0;
		size_t bad = got < len ? got : len;
		for (size_t i = 0; i < got && i < len; i++)
			if (m[HDR + i] != kpat(i)) { bad = i; break; }
		int good = got >= len && bad == len && m[3] == SET;
		printf("KPEER %s message %d: %zu data bytes (want %zu), method %#x%s\n",
		       good ? "ok" : "bad", n, got, len, m[3],
		       good || bad == got ? "" : ", pattern differs");
		fflush(stdout);
		ok += good;
		if (reply) {
			uint8_t r[256] = { 0 };
			uint64_t tid;
			void *out = calloc(1, umad_size() + sizeof(r));
			memcpy(&tid, m + 8, 8);
			put_header(r, GETRESP, tid, 0);
			r[HDR] = good ? 0x4f : 0xee;     /* 'O' for a message that checked out */
			memcpy(umad_get_mad(out), r, sizeof(r));
			memcpy(umad_get_mad_addr(out), umad_get_mad_addr(umad), sizeof(struct ib_mad_addr));
			umad_get_mad_addr(out)->qpn = htonl(1);
			umad_get_mad_addr(out)->qkey = htonl(0x80010000);
			/* ib_umad refuses (EINVAL) a response that looks like one
			 * still in flight on this fd (the final ACK): retry. */
			for (int t = 0; t < 100; t++) {
				rc = umad_send(fd, agent, out, sizeof(r), 0, 0);
				if (rc == 0)
					break;
				usleep(1000);
			}
			if (rc)
				die("umad_send reply", rc);
			free(out);
		}
	}
	printf("KPEER done %d of %d\n", ok, count);
	return ok == count ? 0 : 1;
}

static int do_send(const char *ca, const char *dgid, size_t len, int count, int tmo)
{
	struct in6_addr gid;
	size_t cap = HDR + len;
	void *umad = calloc(1, umad_size() + cap);
	void *in = calloc(1, umad_size() + 4096);
	int ok = 0;
	if (inet_pton(AF_INET6, dgid, &gid) != 1)
		die("bad DGID", EINVAL);
	open_port(ca, 1, 0);
	for (int n = 0; n < count; n++) {
		uint8_t *m = umad_get_mad(umad);
		memset(m, 0, cap);
		put_header(m, SET, htobe64(0x00c0ff00 + n), 1);
		for (size_t i = 0; i < len; i++)
			m[HDR + i] = kpat(i);
		umad_set_addr(umad, 0, 1, 0, 0x80010000);
		struct ib_mad_addr *a = umad_get_mad_addr(umad);
		a->grh_present = 1;
		memcpy(a->gid, &gid, 16);
		a->gid_index = 0;
		a->hop_limit = 64;
		int rc = umad_send(fd, agent, umad, (int)cap, tmo, 1);
		if (rc < 0)
			die("umad_send", rc);
		int l = 4096;
		rc = umad_recv(fd, in, &l, 4 * tmo + 5000);
		if (rc < 0)
			die("umad_recv", rc);
		uint8_t *r = umad_get_mad(in);
		int st = umad_status(in);
		int good = st == 0 && r[3] == GETRESP && r[HDR] == 0x4f;
		printf("KPEER %s send %d: status %d, answer method %#x, verdict %#x\n",
		       good ? "ok" : "bad", n, st, r[3], r[HDR]);
		fflush(stdout);
		ok += good;
	}
	printf("KPEER done %d of %d\n", ok, count);
	return ok == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 7 && !strcmp(argv[1], "recv"))
		return do_recv(argv[2], strtoul(argv[3], 0, 0), atoi(argv[4]),
			       !strcmp(argv[5], "reply"), atoi(argv[6]));
	if (argc >= 7 && !strcmp(argv[1], "send"))
		return do_send(argv[2], argv[3], strtoul(argv[4], 0, 0), atoi(argv[5]), atoi(argv[6]));
	if (argc >= 4 && !strcmp(argv[1], "hold")) {
		open_port(argv[2], 0, 1);
		sleep(atoi(argv[3]));
		return 0;
	}
	fprintf(stderr, "usage: kpeer recv CA LEN COUNT reply|noreply SECS | "
			"send CA DGID LEN COUNT TIMEOUT_MS | hold CA SECS\n");
	return 2;
}
