/*
 * anchor: the libibmad reference rate for `mad bench --vs-libibmad`.
 *
 * Issues synchronous SMP Get queries exactly the way infiniband-diags'
 * smpquery does: mad_rpc_open_port() with the SMI classes, the destination
 * resolved as a directed route with str2drpath() (or a LID with
 * ib_portid_set()), then smp_query_via() per query, which runs libibmad's
 * madrpc (umad_send, umad_recv with the timeout, TID match, retries).
 * One query is outstanding at a time: that is how every infiniband-diags
 * tool uses libibmad.
 *
 * Runs N queries or T seconds (whichever ends first), round-robin over the
 * given destinations and attributes, and prints one JSON line:
 *   {"impl":"libibmad","attrs":"NodeInfo","targets":["0"],"queries":...,
 *    "errors":...,"seconds":...,"qps":...,"lat_us":{"p50":...,"p99":...}}
 *
 * Under ibsim: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
 * IBSIM_SOCKNAME=NAME ./anchor -D 0 -n 100000
 *
 * Build: bench-anchor/build.sh (cc ... -libmad -libumad).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#define MAX_TARGETS 64

struct target {
	char text[128];
	ib_portid_t portid;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted nanosecond samples, in microseconds. */
static double pct_us(const uint32_t *sorted, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return 0.0;
	rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1] / 1000.0;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-C ca] [-P port] [-D drpath]... [-L lid]... [-a attrs]\n"
		"          [-n queries] [-t seconds] [-w warmup] [-T timeout_ms]\n"
		"  -D drpath   directed route as smpquery -D takes it (\"0\", \"0,1,3\");\n"
		"              repeat for several destinations (round-robin)\n"
		"  -L lid      LID-routed destination (repeatable)\n"
		"  -a attrs    nodeinfo, portinfo or both (alternating); default nodeinfo\n"
		"  -n queries  queries to time (default 100000)\n"
		"  -t seconds  stop after this long even if fewer (default 10)\n"
		"  -w warmup   untimed queries first (default 1000)\n"
		"  -T ms       per-query timeout (default 1000; retries 0)\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	int mgmt_classes[2] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS };
	struct target targets[MAX_TARGETS];
	int ntargets = 0;
	char *ca = NULL;
	int port = 0;
	long nq = 100000, warmup = 1000;
	double tmax = 10.0;
	int timeout = 1000;
	const char *attrs = "nodeinfo";
	unsigned attr_list[2];
	int nattrs;
	struct ibmad_port *srcport;
	uint32_t *lat;
	long i, done = 0, errors = 0;
	double t0, t1, elapsed;
	uint8_t buf[IB_SMP_DATA_SIZE];
	uint64_t last_guid = 0;
	int c;

	while ((c = getopt(argc, argv, "C:P:D:L:a:n:t:w:T:h")) != -1) {
		switch (c) {
		case 'C':
			ca = optarg;
			break;
		case 'P':
			port = atoi(optarg);
			break;
		case 'D':
		case 'L':
			if (ntargets == MAX_TARGETS) {
				fprintf(stderr, "too many destinations\n");
				return 2;
			}
			memset(&targets[ntargets], 0, sizeof(targets[0]));
			snprintf(targets[ntargets].text,
				 sizeof(targets[ntargets].text), "%s%s",
				 c == 'L' ? "lid " : "", optarg);
			if (c == 'D') {
				/* As ib_resolve_portid_str_via does for -D. */
				ib_portid_set(&targets[ntargets].portid, 0, 0, 0);
				if (str2drpath(&targets[ntargets].portid.drpath,
					       optarg, 0, 0) < 0) {
					fprintf(stderr, "bad directed route %s\n",
						optarg);
					return 2;
				}
			} else {
				ib_portid_set(&targets[ntargets].portid,
					      atoi(optarg), 0, 0);
			}
			ntargets++;
			break;
		case 'a':
			attrs = optarg;
			break;
		case 'n':
			nq = atol(optarg);
			break;
		case 't':
			tmax = atof(optarg);
			break;
		case 'w':
			warmup = atol(optarg);
			break;
		case 'T':
			timeout = atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (ntargets == 0) {
		ib_portid_set(&targets[0].portid, 0, 0, 0);
		str2drpath(&targets[0].portid.drpath, "0", 0, 0);
		strcpy(targets[0].text, "0");
		ntargets = 1;
	}
	if (!strcmp(attrs, "nodeinfo")) {
		attr_list[0] = IB_ATTR_NODE_INFO;
		nattrs = 1;
	} else if (!strcmp(attrs, "portinfo")) {
		attr_list[0] = IB_ATTR_PORT_INFO;
		nattrs = 1;
	} else if (!strcmp(attrs, "both")) {
		attr_list[0] = IB_ATTR_NODE_INFO;
		attr_list[1] = IB_ATTR_PORT_INFO;
		nattrs = 2;
	} else {
		usage(argv[0]);
	}
	if (nq <= 0)
		usage(argv[0]);

	srcport = mad_rpc_open_port(ca, port, mgmt_classes, 2);
	if (!srcport) {
		fprintf(stderr, "mad_rpc_open_port(%s, %d) failed\n",
			ca ? ca : "(default)", port);
		return 1;
	}
	mad_rpc_set_timeout(srcport, timeout);
	mad_rpc_set_retries(srcport, 0);

	lat = malloc(sizeof(*lat) * (size_t)nq);
	if (!lat) {
		perror("malloc");
		return 1;
	}

	for (i = 0; i < warmup; i++) {
		struct target *t = &targets[i % ntargets];
		if (!smp_query_via(buf, &t->portid, attr_list[i % nattrs], 0, 0,
				   srcport)) {
			fprintf(stderr, "warm-up query to %s failed\n",
				t->text);
			return 1;
		}
	}

	t0 = now_s();
	for (i = 0; i < nq; i++) {
		struct target *t = &targets[i % ntargets];
		unsigned attr = attr_list[(i / ntargets) % nattrs];
		/* PortInfo: attribute modifier 0 = the port the SMP came in by
		 * (what smpquery portinfo sends with no port argument). */
		double a = now_s(), b;
		uint8_t *r = smp_query_via(buf, &t->portid, attr, 0, 0, srcport);
		b = now_s();
		if (!r) {
			errors++;
		} else if (attr == IB_ATTR_NODE_INFO) {
			last_guid = mad_get_field64(buf, 0, IB_NODE_GUID_F);
		}
		lat[done++] = (uint32_t)((b - a) * 1e9);
		if ((i & 63) == 63 && b - t0 >= tmax)
			break;
	}
	t1 = now_s();
	elapsed = t1 - t0;
	qsort(lat, (size_t)done, sizeof(*lat), cmp_u32);

	printf("{\"impl\":\"libibmad\",\"api\":\"smp_query_via\","
	       "\"outstanding\":1,\"attrs\":\"%s\",\"targets\":[", attrs);
	for (i = 0; i < ntargets; i++)
		printf("%s\"%s\"", i ? "," : "", targets[i].text);
	printf("],\"queries\":%ld,\"errors\":%ld,\"seconds\":%.6f,"
	       "\"qps\":%.1f,\"lat_us\":{\"p50\":%.2f,\"p90\":%.2f,"
	       "\"p99\":%.2f,\"p99.9\":%.2f,\"max\":%.2f},"
	       "\"last_node_guid\":\"0x%016" PRIx64 "\"}\n",
	       done, errors, elapsed, (double)(done - errors) / elapsed,
	       pct_us(lat, done, 50), pct_us(lat, done, 90),
	       pct_us(lat, done, 99), pct_us(lat, done, 99.9),
	       pct_us(lat, done, 100), last_guid);
	free(lat);
	mad_rpc_close_port(srcport);
	return errors ? 1 : 0;
}
