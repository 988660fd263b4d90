/*
 * tests/netns_fixture.c — network namespaces and nftables cuts for the
 * replica-set fault tests (netns_fixture.h).
 */
#include "netns_fixture.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char ns_names[NODES + 1][32]; /* [NS_HUB]: the hub, with the bridge and etcd */
char ns_listen_arg[NODES][sizeof(((node *)0)->host) + 8];
static bool ns_made[NODES + 1];
static bool cuts[NODES + 1][NODES + 1];
static bool answers_cut[NODES]; /* node i drops etcd's segments with data only (ns_drop_from) */

int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void ns_cleanup(void)
{
    for (int i = 0; i < NODES; i++)
        if (nodes[i].up && nodes[i].srv.pid > 0)
            kill(nodes[i].srv.pid, SIGKILL);
    for (int i = 0; i <= NODES; i++)
        if (ns_made[i]) {
            sh("ip netns delete %s", ns_names[i]); /* its veth ends go with it */
            ns_made[i] = false;
        }
}

/* On every path out of the case's process: the namespaces go. */
static void ns_cleanup_on_abort(int sig)
{
    (void)sig;
    ns_cleanup();
    signal(SIGABRT, SIG_DFL);
    abort();
}

int ns_fd(int i)
{
    char path[96];
    snprintf(path, sizeof(path), "/var/run/netns/%s", ns_names[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ASSERT(fd > 0);
    return fd;
}

void ns_setup(void)
{
    if (geteuid() != 0)
        SLOT_TEST_SKIP("network partitions need root (network namespaces)");
    if (sh("ip netns list") != 0)
        SLOT_TEST_SKIP("`ip netns` is not available");
    for (int i = 0; i <= NODES; i++)
        if (i == NS_HUB)
            snprintf(ns_names[i], sizeof(ns_names[i]), "slt%d-hub", (int)getpid() % 1000000);
        else
            snprintf(ns_names[i], sizeof(ns_names[i]), "slt%d-n%d", (int)getpid() % 1000000, i + 1);
    for (int i = 0; i <= NODES; i++) {
        if (sh("ip netns add %s", ns_names[i]) != 0) {
            ns_cleanup();
            SLOT_TEST_SKIP("`ip netns add` failed");
        }
        ns_made[i] = true;
        ASSERT_EQ(sh("ip -n %s link set lo up", ns_names[i]), 0);
    }
    signal(SIGABRT, ns_cleanup_on_abort);
    const char *hub = ns_names[NS_HUB];
    ASSERT_EQ(sh("ip -n %s link add br0 type bridge && ip -n %s addr add 10.200.0.1/24 dev br0 && "
                 "ip -n %s link set br0 up",
                 hub, hub, hub),
              0);
    for (int i = 0; i < NODES; i++) {
        ASSERT_EQ(sh("ip -n %s link add v%d type veth peer name eth0 netns %s", hub, i, ns_names[i]), 0);
        ASSERT_EQ(sh("ip -n %s link set v%d master br0 && ip -n %s link set v%d up", hub, i, hub, i), 0);
        ASSERT_EQ(sh("ip -n %s addr add 10.200.0.%d/24 dev eth0 && ip -n %s link set eth0 up", ns_names[i], 11 + i,
                     ns_names[i]),
                  0);
        snprintf(nodes[i].host, sizeof(nodes[i].host), "10.200.0.%d", 11 + i);
        nodes[i].netns_fd = ns_fd(i);
    }
}

void ns_enter_hub_and_start_etcd(void)
{
    int hub = ns_fd(NS_HUB);
    ASSERT_EQ(setns(hub, CLONE_NEWNET), 0); /* this thread, the threads it starts and etcd: in the hub */
    close(hub);
    etcd_fixture_host = "10.200.0.1";
    snprintf(etcd_host, sizeof(etcd_host), "10.200.0.1");
    etcd_start(&etcd);
    struct sigaction sa = {.sa_handler = ns_cleanup_on_abort};
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGABRT, &sa, NULL), 0); /* etcd_start set its own: ours cleans up first */
    for (int i = 0; i < NODES; i++) {
        snprintf(ns_listen_arg[i], sizeof(ns_listen_arg[i]), "%s:7400", nodes[i].host);
        nodes[i].extra[0] = "--listen";
        nodes[i].extra[1] = ns_listen_arg[i];
        nodes[i].extra[2] = "--insecure"; /* no token: the address is inside the test's own namespaces */
        nodes[i].extra[3] = NULL;
    }
}

bool ns_cut_available(void)
{
    for (int i = 0; i <= NODES; i++)
        if (sh("ip netns exec %s nft 'add table inet slt; add chain inet slt in "
               "{ type filter hook input priority 0 ; }'",
               ns_names[i]) != 0)
            return false;
    return true;
}

/* Rewrites namespace i's input chain from the cut matrix. */
static void apply(int i)
{
    char rules[1536];
    size_t len = (size_t)snprintf(rules, sizeof(rules), "flush chain inet slt in");
    for (int j = 0; j <= NODES; j++) {
        if (j == i || !cuts[i][j])
            continue;
        if (i == NS_HUB) /* etcd's side: the node's packets to etcd's client port */
            len += (size_t)snprintf(rules + len, sizeof(rules) - len,
                                    "; add rule inet slt in ip saddr %s tcp dport %d drop", nodes[j].host, etcd.cport);
        else if (j == NS_ETCD) /* the node's side: etcd's answers */
            len += (size_t)snprintf(rules + len, sizeof(rules) - len,
                                    "; add rule inet slt in ip saddr 10.200.0.1 tcp sport %d drop", etcd.cport);
        else
            len += (size_t)snprintf(rules + len, sizeof(rules) - len, "; add rule inet slt in ip saddr %s drop",
                                    nodes[j].host);
        ASSERT(len < sizeof(rules));
    }
    if (i < NODES && answers_cut[i] && !cuts[i][NS_ETCD]) /* a segment of 100 bytes or more: not a SYN-ACK or an ACK */
        len += (size_t)snprintf(rules + len, sizeof(rules) - len,
                                "; add rule inet slt in ip saddr 10.200.0.1 tcp sport %d ip length >= 100 drop",
                                etcd.cport);
    ASSERT(len < sizeof(rules));
    ASSERT_EQ(sh("ip netns exec %s nft '%s'", ns_names[i], rules), 0);
}

void ns_cut(int a, int b, bool cut)
{
    ASSERT(a >= 0 && a <= NODES && b >= 0 && b <= NODES && a != b);
    cuts[a][b] = cuts[b][a] = cut;
    apply(a);
    apply(b);
}

void ns_cut_from(int a, const int *to, int nto)
{
    for (int k = 0; k < nto; k++) {
        ASSERT(a >= 0 && a <= NODES && to[k] >= 0 && to[k] <= NODES && a != to[k]);
        cuts[a][to[k]] = cuts[to[k]][a] = true;
    }
    apply(a); /* a's side first, in one step: it hears from none of them from now on */
    for (int k = 0; k < nto; k++)
        apply(to[k]);
}

void ns_drop_from(int at, int from, bool drop)
{
    ASSERT(at >= 0 && at < NODES && from >= 0 && from <= NODES && at != from);
    if (from == NS_ETCD)
        answers_cut[at] = drop;
    else
        cuts[at][from] = drop;
    apply(at);
}

void ns_heal_all(void)
{
    memset(cuts, 0, sizeof(cuts));
    memset(answers_cut, 0, sizeof(answers_cut));
    for (int i = 0; i <= NODES; i++)
        apply(i);
}

const char *ns_cut_desc(void)
{
    static char out[256];
    size_t len = 0;
    out[0] = 0;
    for (int a = 0; a <= NODES; a++)
        for (int b = a + 1; b <= NODES; b++)
            if (b == NS_ETCD && answers_cut[a] && !cuts[a][b])
                len += (size_t)snprintf(out + len, sizeof(out) - len, "%setcd>%s(answers)", len ? " " : "",
                                        nodes[a].id);
            else if (cuts[a][b] || cuts[b][a]) { /* "a-b" both ways; "b>a": a drops what b sends, one way */
                const char *na = nodes[a].id, *nb = b == NS_ETCD ? "etcd" : nodes[b].id;
                bool both = cuts[a][b] && cuts[b][a];
                len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s%s%s", len ? " " : "",
                                        both || cuts[b][a] ? na : nb, both ? "-" : ">", both || cuts[b][a] ? nb : na);
            }
    return len ? out : "none";
}
