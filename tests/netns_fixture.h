/*
 * tests/netns_fixture.h — network namespaces for the replica-set fault tests
 * (tests/test_cluster_faults.c, tests/test_cluster_partitions.c): a hub
 * namespace with a bridge (10.200.0.1/24; etcd and the test's own threads
 * live there) and one namespace per node with 10.200.0.(11+i)/24 on a veth
 * whose other end is on the bridge. Every address is inside namespaces the
 * test made; they are deleted on every way out of the case's process.
 *
 * Cuts (ns_cut_*) drop packets on arrival with nftables in the receiving
 * namespace, so a sender sees only timeouts, never a reset: the way a
 * switch that fails or a partition between racks looks to TCP.
 *
 * Each case runs in its own forked child (harness.c); this state is global.
 * Root and `ip netns` are needed (the case is skipped otherwise); nft for
 * the cuts (ns_cut_available).
 */
#ifndef SLOT_TEST_NETNS_FIXTURE_H
#define SLOT_TEST_NETNS_FIXTURE_H

#include <stdbool.h>

#include "cluster_fixture.h"

#define NS_HUB NODES  /* index of the hub namespace in ns_names */
#define NS_ETCD NODES /* in cuts: etcd, the hub's etcd client port */

extern char ns_names[NODES + 1][32];
extern char ns_listen_arg[NODES][sizeof(((node *)0)->host) + 8]; /* host + ":7400" */

/* sh — run a shell command (output discarded); its exit status, -1 when it did not run. */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ns_setup — make the namespaces and links (skips the case without root or
 * `ip netns`); node i's host becomes 10.200.0.(11+i) and its netns_fd set. */
void ns_setup(void);
/* ns_fd — an fd of namespace i (NS_HUB for the hub). */
int ns_fd(int i);
/* ns_enter_hub_and_start_etcd — this thread (and those it starts) into the
 * hub, etcd started there, the nodes given --listen on their own address
 * and --insecure (no token: the addresses are the test's own). */
void ns_enter_hub_and_start_etcd(void);
/* ns_cleanup — kill the nodes still up and delete the namespaces. */
void ns_cleanup(void);

/* ns_cut_available — nft works in the namespaces (the chains are made);
 * false: the cut cases skip. Call after ns_setup. */
bool ns_cut_available(void);
/* ns_cut — cut (true) or heal (false) the link between a and b, both
 * directions: node indexes, or NS_ETCD for etcd's client port. Applied at once. */
void ns_cut(int a, int b, bool cut);
/* ns_cut_from — cut a from each of to[0..nto) (as ns_cut), a's own side in one step. */
void ns_cut_from(int a, const int *to, int nto);
/* ns_drop_from — namespace at drops (drop true) or takes again what arrives
 * from `from`, one direction only: from still hears at. from a node index:
 * all its packets; NS_ETCD: etcd's answers only (its segments with data:
 * SYN-ACKs and ACKs pass, so at's requests still reach etcd and apply, as
 * when a link fails after a request went out). Applied at once; ns_heal_all
 * clears it. */
void ns_drop_from(int at, int from, bool drop);
/* ns_heal_all — every cut healed. */
void ns_heal_all(void);
/* ns_cut_desc — the cuts now, as "n1-n2 n3-etcd" ("none"); static buffer. */
const char *ns_cut_desc(void);

#endif
