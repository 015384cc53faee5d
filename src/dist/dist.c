// MPI start-up and the fixed-order gradient reduction (the design: dist.h, docs/distributed.md).
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dist/dist.h"
#include "io/files.h"
#include "io/json.h"
#include "kernels/cpu.h"

static int g_active = 0, g_rank = 0, g_size = 1;

int dist_launched(void) {
    // mpirun (ORTE) sets OMPI_COMM_WORLD_SIZE; PMI-based launchers (srun, hydra) set PMI_SIZE.
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE");
}

int dist_init(int *argc, char ***argv, char *err, size_t errlen) {
    if (!dist_launched()) return 0;
    int provided = 0;
    // Only the main thread calls MPI (between OpenMP regions).
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init failed");
        return -1;
    }
    g_active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    // The ranks on this machine, and those among them that may run on the CPUs this one may: all of
    // them where mpirun bound none (--bind-to none, or more ranks than cores), those of one socket under
    // --bind-to socket, this one alone under its binding to a core each. The default thread count shares
    // the CPUs among them (cpu_share_cpus; docs/distributed.md, "Threads of several processes").
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine)) CPU_ZERO(&mine);
    MPI_Comm node, same;
    int here = 1, sharing = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_split(node, (int)(dist_hash_bytes(&mine, sizeof mine, 0xcbf29ce484222325ull) >> 33), 0, &same);
    MPI_Comm_size(node, &here);
    MPI_Comm_size(same, &sharing);
    MPI_Comm_free(&same);
    MPI_Comm_free(&node);
    cpu_share_cpus(sharing, here);
    if (g_rank > 0 && !freopen("/dev/null", "w", stdout)) {
        snprintf(err, errlen, "rank %d: cannot silence stdout", g_rank);
        return -1;
    }
    return 0;
}

void dist_finalize(void) {
    if (g_active) MPI_Finalize();
    g_active = 0;
}

// Used only where the ranks cannot agree on a failure first: a programming error (a caller's wrong
// argument, which no user input reaches). Every allocation a collective needs is agreed on instead
// (agree_alloc below), so that out of memory is one line and exit 1 (docs/distributed.md, "Faults").
void dist_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (g_active) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_active(void) { return g_active; }

// After an allocation that a collective then needs, every rank says whether its own succeeded (one
// small allreduce, carrying nothing a step computes with): 0 when every rank holds its buffer,
// DIST_NO_MEMORY_HERE when this rank's failed, DIST_NO_MEMORY_ELSEWHERE when another's did. No rank
// then enters the collective alone, and none is left waiting in it (docs/distributed.md, "Faults").
static int agree_alloc(int ok_here) {
    int all_ok = ok_here;
    if (g_active && g_size > 1) MPI_Allreduce(&ok_here, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all_ok ? 0 : ok_here ? DIST_NO_MEMORY_ELSEWHERE : DIST_NO_MEMORY_HERE;
}

// err for agree_alloc's failure rc: what the buffer was for, and its size on the rank that lacked it.
static void no_memory(char *err, size_t errlen, int rc, const char *what, size_t bytes) {
    if (rc == DIST_NO_MEMORY_HERE)
        snprintf(err, errlen, "out of memory for %s (%zu bytes)", what, bytes);
    else
        snprintf(err, errlen, "another process is out of memory for %s", what);
}

int dist_max_int(int v) {
    int out = v;
    if (g_active) MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

// Every rank's 64-bit value, gathered in rank order into all[dist_size()] (dist_check_same_list's hashes).
static void allgather_u64(uint64_t v, uint64_t *all) {
    if (!g_active) { all[0] = v; return; }
    MPI_Allgather(&v, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
}

double dist_max_double(double v) {
    double out = v;
    if (g_active) MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

void dist_sum_doubles(double *v, int n) {
    if (g_active) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int dist_max_rank(double key) {
    struct { double key; int rank; } mine = {key, g_rank}, top = mine;
    if (g_active) MPI_Allreduce(&mine, &top, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    return top.rank;
}

void dist_bcast(void *buf, size_t bytes, int root) {
    if (!g_active) return;
    // MPI counts are int: large buffers go in pieces of 1 GiB.
    char *p = buf;
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < ((size_t)1 << 30) ? bytes - done : ((size_t)1 << 30);
        MPI_Bcast(p + done, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        done += n;
    }
}

int dist_gather_bytes(const void *mine, size_t n, char **all, size_t *total, char *err, size_t errlen) {
    *total = 0;
    *all = NULL;
    if (!g_active || g_size == 1) {   // one process: its own bytes
        char *out = malloc(n + 1);
        if (!out) { no_memory(err, errlen, DIST_NO_MEMORY_HERE, "the lines to gather", n + 1); return DIST_NO_MEMORY_HERE; }
        if (n) memcpy(out, mine, n);
        out[n] = 0;
        *total = n;
        *all = out;
        return 0;
    }
    // A few lines of text a step at most: int counts; a part or a sum over 1 GiB is refused as memory lacking.
    int len = (int)(n > ((size_t)1 << 30) ? 0 : n), stack[2 * 64], *counts = NULL, *disp = NULL;
    if (g_rank == 0) counts = g_size <= 64 ? stack : malloc((size_t)g_size * 2 * sizeof(int));
    int rc = agree_alloc(n <= ((size_t)1 << 30) && (g_rank > 0 || counts));
    if (rc) {
        no_memory(err, errlen, rc, "the lines to gather", n);
        if (counts != stack) free(counts);
        return rc;
    }
    if (g_rank == 0) disp = counts + g_size;
    MPI_Gather(&len, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *out = NULL;
    size_t sum = 0;
    int ok = 1;
    if (g_rank == 0) {
        for (int r = 0; r < g_size && ok; r++) {
            ok = sum + (size_t)counts[r] <= ((size_t)1 << 30);
            disp[r] = (int)sum;
            sum += (size_t)counts[r];
        }
        ok = ok && (out = malloc(sum + 1)) != NULL;
    }
    // Only rank 0 allocates: it tells the others whether the gather goes on.
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        no_memory(err, errlen, g_rank == 0 ? DIST_NO_MEMORY_HERE : DIST_NO_MEMORY_ELSEWHERE, "the lines to gather", sum + 1);
        if (counts != stack) free(counts);
        return g_rank == 0 ? DIST_NO_MEMORY_HERE : DIST_NO_MEMORY_ELSEWHERE;
    }
    if (g_rank == 0) {
        out[sum] = 0;
        *total = sum;
    }
    MPI_Gatherv(mine, len, MPI_BYTE, out, counts, disp, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (counts != stack) free(counts);
    *all = out;
    return 0;
}

int dist_first_other_text(const char *mine, char *theirs, char *ours, size_t n) {
    if (!g_active || g_size == 1) return 0;
    char own[DIST_TEXT_MAX] = {0}, zero[DIST_TEXT_MAX] = {0};
    snprintf(own, sizeof own, "%s", mine);
    memcpy(zero, own, sizeof zero);
    MPI_Bcast(zero, DIST_TEXT_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    int differs = memcmp(zero, own, sizeof own) ? g_rank : g_size, first = g_size;
    MPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == g_size) return 0;
    MPI_Bcast(own, DIST_TEXT_MAX, MPI_CHAR, first, MPI_COMM_WORLD);   // that rank's text, to every rank
    snprintf(theirs, n, "%s", own);
    snprintf(ours, n, "%s", zero);
    return first;
}

void dist_barrier(void) {
    if (g_active) MPI_Barrier(MPI_COMM_WORLD);
}

// FNV-1a 64 over the count and every string with its terminating zero.
static uint64_t list_hash(const char *const *items, size_t stride, int n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 4; i++) { h ^= (uint64_t)((unsigned)n >> (8 * i) & 0xff); h *= 0x100000001b3ull; }
    for (int k = 0; k < n; k++) {
        const unsigned char *p = (const unsigned char *)*(const char *const *)((const char *)items + (size_t)k * stride);
        do { h ^= *p; h *= 0x100000001b3ull; } while (*p++);
    }
    return h;
}

uint64_t dist_hash_bytes(const void *p, size_t bytes, uint64_t h) {
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < bytes; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

// Every rank's hash gathered: in *first_bad the first rank whose hash is not rank 0's (-1 when all
// agree), and in *i_differ whether this rank's is not. 0, or agree_alloc's failure (more than 64
// ranks need a buffer for the hashes).
static int first_rank_differing(uint64_t mine, int *first_bad, int *i_differ) {
    uint64_t all_stack[64], *all = all_stack;
    if (g_size > 64) {   // the same on every rank: agreed only where a rank may lack it
        all = malloc((size_t)g_size * sizeof *all);
        int rc = agree_alloc(all != NULL);
        if (rc) { free(all); return rc; }
    }
    allgather_u64(mine, all);
    *first_bad = -1;
    for (int r = 1; r < g_size && *first_bad < 0; r++) if (all[r] != all[0]) *first_bad = r;
    *i_differ = all[g_rank] != all[0];
    if (all != all_stack) free(all);
    return 0;
}

int dist_check_same_list(const char *const *items, size_t stride, int n, const char *what, int words, char *err,
                         size_t errlen) {
    if (!g_active || g_size == 1) return 0;
    int i_differ, first_bad, rc = first_rank_differing(list_hash(items, stride, n), &first_bad, &i_differ);
    if (rc) { no_memory(err, errlen, rc, "the processes' hashes", (size_t)g_size * sizeof(uint64_t)); return rc; }
    if (first_bad < 0) return 0;
    // Rank 0's list as one blob of strings, each with its zero.
    uint64_t bytes = 0;
    if (g_rank == 0)
        for (int k = 0; k < n; k++) bytes += strlen(*(const char *const *)((const char *)items + (size_t)k * stride)) + 1;
    dist_bcast(&bytes, sizeof bytes, 0);
    int n0 = n;
    dist_bcast(&n0, sizeof n0, 0);
    char *blob = malloc(bytes + 1);
    char what_list[96];
    snprintf(what_list, sizeof what_list, "rank 0's %s, to compare", what);
    if ((rc = agree_alloc(blob != NULL))) { free(blob); no_memory(err, errlen, rc, what_list, bytes + 1); return rc; }
    blob[bytes] = 0;
    if (g_rank == 0) {
        char *p = blob;
        for (int k = 0; k < n; k++) {
            const char *s = *(const char *const *)((const char *)items + (size_t)k * stride);
            size_t len = strlen(s) + 1;
            memcpy(p, s, len);
            p += len;
        }
    }
    dist_bcast(blob, bytes, 0);
    rc = i_differ ? -2 : -1;
    if (i_differ) {
        const char *p = blob;
        int k = 0;
        for (; k < n && k < n0; k++, p += strlen(p) + 1)
            if (strcmp(p, *(const char *const *)((const char *)items + (size_t)k * stride))) break;
        const char *mine = k < n ? *(const char *const *)((const char *)items + (size_t)k * stride) : NULL;
        // Where the lengths differ and only one of the two first differing entries is in the other list
        // (a file missing, or skipped as unreadable, on one machine), that one is named as missing:
        // where to look (docs/distributed.md).
        // Not for a command line's words: two commands (`train ... : data DIR`) differ from their first
        // word on, and "'train' is missing here" pointed at the wrong thing.
        int here = 1, there = 1;
        if (k < n && k < n0 && n != n0 && !words) {
            here = there = 0;
            for (int j = k; j < n && !here; j++)
                here = !strcmp(p, *(const char *const *)((const char *)items + (size_t)j * stride));
            const char *q = p;
            for (int j = k; j < n0 && !there; j++, q += strlen(q) + 1) there = !strcmp(q, mine);
        }
        // Words of the command line are echoed cut as every echoed word is (docs/interface.md, section
        // 1); file names whole. Two words cut alike say where they part.
        char mine_cut[UTF8_CLIP_SIZE], p_cut[UTF8_CLIP_SIZE], parted[64] = "";
        const char *mine_said = mine && words ? utf8_clip(mine_cut, mine) : mine;
        const char *p_said = k < n0 && words ? utf8_clip(p_cut, p) : p;
        if (k < n && k < n0 && words && !strcmp(mine_said, p_said)) {
            size_t b = 0;
            while (mine[b] == p[b]) b++;
            snprintf(parted, sizeof parted, " (the two differ from byte %zu on)", b + 1);
        }
        char counts[80];   // "1 entry here", as every count is said
        snprintf(counts, sizeof counts, "(%d entr%s here, %d on rank 0)", n, n == 1 ? "y" : "ies", n0);
        if (k < n && k < n0 && !here && there)
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: '%s' (rank 0's entry %d) is missing here "
                     "%s", g_rank, what, p_said, k + 1, counts);
        else if (k < n && k < n0 && here && !there)
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: '%s' (entry %d here) is missing on rank 0 "
                     "%s", g_rank, what, mine_said, k + 1, counts);
        else if (k < n && k < n0 && n != n0)
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: entry %d is '%s' here and '%s' on rank 0%s "
                     "%s", g_rank, what, k + 1, mine_said, p_said, parted, counts);
        else if (k < n && k < n0)
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: entry %d is '%s' here and '%s' on rank 0%s",
                     g_rank, what, k + 1, mine_said, p_said, parted);
        else if (k < n)
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: '%s' is missing on rank 0 %s",
                     g_rank, what, mine_said, counts);
        else
            snprintf(err, errlen, "rank %d sees a different %s than rank 0: '%s' is missing here %s",
                     g_rank, what, p_said, counts);
    } else {
        snprintf(err, errlen, "rank %d sees a different %s than this rank (its message names the first difference)", first_bad, what);
    }
    free(blob);
    return rc;
}

int dist_check_same_numbers(const long long *first, size_t stride, int n, int *index, long long *theirs,
                            const char *what, char *err, size_t errlen) {
    if (!g_active || g_size == 1) return 0;
    const char *base = (const char *)first;
    uint64_t h = DIST_HASH_START;
    for (int k = 0; k < n; k++) h = dist_hash_bytes(base + (size_t)k * stride, sizeof(long long), h);
    int i_differ, first_bad, rc = first_rank_differing(h, &first_bad, &i_differ);
    if (rc) { no_memory(err, errlen, rc, "the processes' hashes", (size_t)g_size * sizeof(uint64_t)); return rc; }
    if (first_bad < 0) return 0;
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(long long);
    long long *v0 = malloc(bytes);
    char what_list[96];
    snprintf(what_list, sizeof what_list, "rank 0's %s, to compare", what);
    if ((rc = agree_alloc(v0 != NULL))) { free(v0); no_memory(err, errlen, rc, what_list, bytes); return rc; }
    if (g_rank == 0)
        for (int k = 0; k < n; k++) v0[k] = *(const long long *)(base + (size_t)k * stride);
    dist_bcast(v0, (size_t)n * sizeof *v0, 0);
    *index = first_bad;
    if (i_differ) {
        int k = 0;
        while (k < n - 1 && v0[k] == *(const long long *)(base + (size_t)k * stride)) k++;
        *index = k;
        *theirs = v0[k];
    }
    free(v0);
    return i_differ ? -2 : -1;
}

// ---------------------------------------------------------------------------------------------
// Groups and the tree

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

int dist_default_groups(int batch) {
    int g = DIST_DEFAULT_GROUPS;
    while (g > 1 && batch % g) g /= 2;
    return g;
}

// The other way out of a refusal that needs `need` groups (a power of two) a step: more groups where the
// batch allows them (up to its largest power-of-two divisor), else another batch (--batch and --groups
// go up to 4096). ", or ..." into way, or "" when neither can be. given: --groups was given, which the
// new batch would keep.
static void more_groups_way(char *way, size_t n, int batch, long need, int given) {
    int most = batch & -batch;
    if (need > 4096) way[0] = 0;
    else if (need <= most) snprintf(way, n, ", or --groups %ld", need);
    else {
        // With --groups too past the default groups (DIST_DEFAULT_GROUPS), which the new batch would not
        // reach alone, and where --groups was given: kept, it was refused again ("a --batch that 4
        // divides", then "--groups 4").
        char with[48] = "";
        if (need > DIST_DEFAULT_GROUPS || given) snprintf(with, sizeof with, " with --groups %ld", need);
        snprintf(way, n, ", or a --batch that %ld divides%s (a batch of %d has at most %d gradient group%s)", need, with,
                 batch, most, most == 1 ? "" : "s");
    }
}

const char *dist_accum_choice(char *use, size_t n, int d) {
    if (d == 1) snprintf(use, n, "--accum 1");   // "an --accum that divides 1" names the one choice the long way
    else snprintf(use, n, "an --accum that divides %d", d);
    return use;
}

const char *dist_groups_share(char *buf, size_t n, int groups, int procs) {
    int mine = groups / procs;   // one process: the step's groups; several: each one's share
    if (procs == 1) snprintf(buf, n, "the %d gradient group%s of a step", mine, mine == 1 ? "" : "s");
    else snprintf(buf, n, "the %d gradient group%s each of the %d processes has per step", mine, mine == 1 ? "" : "s",
                  procs);
    return buf;
}

int dist_proc_counts(char *buf, size_t n, int groups, int accum) {
    size_t at = 0;
    int last = 0;
    for (int c = 2; c <= groups && accum > 0 && (groups / c) % accum == 0; c *= 2) last = c;
    if (n) buf[0] = 0;
    for (int c = 2; c <= last && at + 32 < n; c *= 2)
        at += (size_t)snprintf(buf + at, n - at, "%s%d", c == 2 ? "" : c == last ? " or " : ", ", c);
    return last;
}

int dist_check_groups(int batch, int groups, int procs, int accum, char *err, size_t errlen) {
    return dist_check_groups_given(batch, groups, 0, procs, accum, err, errlen);
}

int dist_check_groups_given(int batch, int groups, int given, int procs, int accum, char *err, size_t errlen) {
    if (!is_pow2(groups) || batch % groups) {
        snprintf(err, errlen, "%d gradient groups: must be a power of two that divides the batch (%d)", groups, batch);
        return DIST_BAD_GROUPS;
    }
    if (!is_pow2(procs)) {
        char counts[256], way[300];   // the counts that run it, as a resume's refusal names them
        int last = dist_proc_counts(counts, sizeof counts, groups, accum);
        if (last) snprintf(way, sizeof way, "run it without mpirun or with mpirun -np %s", counts);
        else snprintf(way, sizeof way, "run it without mpirun (or with mpirun -np 1)");
        snprintf(err, errlen, "%d processes: each must own a whole subtree of the fixed pairwise tree over the "
                 "%d gradient group%s (bitwise equal results for any process count), so the count must be a "
                 "power of two dividing %d: %s", procs, groups, groups == 1 ? "" : "s", groups, way);
        return DIST_BAD_PROCS;
    }
    if (groups % procs) {
        // The counts that run it named, as for a count that is no power of two (docs/distributed.md).
        char counts[256], count[300], way[160];
        if (dist_proc_counts(counts, sizeof counts, groups, accum))
            snprintf(count, sizeof count, "run it without mpirun or with mpirun -np %s", counts);
        else snprintf(count, sizeof count, "run it without mpirun");
        // Each process then shares its groups among --accum micro-batches: the batch must hold N x K
        // groups, or the advice led to the --accum refusal next (a --batch that 4 divides at --accum 2).
        more_groups_way(way, sizeof way, batch, (long)procs * (is_pow2(accum) ? accum : 1), given);
        snprintf(err, errlen, "%d processes cannot share the %d gradient group%s of a step evenly, which bitwise "
                 "equal results need; %s%s", procs, groups, groups == 1 ? "" : "s", count, way);
        return DIST_BAD_PROCS;
    }
    int mine = groups / procs;
    if (mine % accum) {
        char whose[96], way[160];
        // Groups come in powers of two: an --accum that is not one divides no count of them (more groups
        // or another batch, which "--groups 3" named, cannot help).
        if (is_pow2(accum)) more_groups_way(way, sizeof way, batch, (long)procs * accum, given);
        else snprintf(way, sizeof way, " (a power of two, as every count of gradient groups is)");
        char use[48];
        snprintf(err, errlen, "%d micro-batches cannot share %s evenly; use %s%s", accum,
                 dist_groups_share(whose, sizeof whose, groups, procs), dist_accum_choice(use, sizeof use, mine), way);
        return DIST_BAD_ACCUM;
    }
    return 0;
}

// Items i and i + s for s = 1, 2, 4, ...: for a power-of-two count this is the pairwise tree of
// dist.h (node [l, r) = [l, m) + [m, r)). Elements are independent: threads split the floats.
void tree_sum_floats(float *items, size_t stride, int count, size_t n) {
    for (int s = 1; s < count; s *= 2)
        for (int j = 0; j + s < count; j += 2 * s) {
            float *a = items + (size_t)j * stride;
            const float *b = items + (size_t)(j + s) * stride;
            #pragma omp parallel for schedule(static)
            for (size_t i = 0; i < n; i++) a[i] += b[i];
        }
}

double tree_sum_doubles(const double *v, int count) {
    if (count == 1) return v[0];
    int h = count / 2;
    return tree_sum_doubles(v, h) + tree_sum_doubles(v + h, count - h);
}

// ---------------------------------------------------------------------------------------------
// The step's reduction

#define SHARED_BLOCK 1024   // floats of a rank's partial row in shared_combine (N of them stay in L1)

// Every rank on one machine: rank r's two halves of its rank node (the left one is the gradient
// buffer the step ends in, the right one node[0]; only the left one with one group per rank) live in
// one MPI shared-memory window, and every rank maps every rank's halves.
struct GradShared {
    MPI_Comm node;         // the job's ranks (all on this machine)
    MPI_Win win;
    float **left, **right; // [N] rank r's halves (right[r] NULL with one group per rank)
    float *rows;           // [rows_threads * N * SHARED_BLOCK] each thread's partial rows (shared_combine)
    int rows_threads;
};

static void shared_free(GradShared *sh) {
    if (!sh) return;
    MPI_Win_unlock_all(sh->win);
    MPI_Win_free(&sh->win);
    MPI_Comm_free(&sh->node);
    free(sh->left);
    free(sh->right);
    free(sh->rows);
    free(sh);
}

// The pid of rank 0's probe file made on host, "vitmae-window-probe.<host>.<pid>.<s><ns>" (the time's
// seconds, then 9 digits of nanoseconds), or 0 for any other name (io/files.h's file_sweep_dead).
static long probe_leftover(const char *name, const char *host) {
    long pid;
    const char *p = strncmp(name, "vitmae-window-probe.", 20) ? NULL : file_name_host_pid(name + 20, host, &pid);
    if (!p || *p++ != '.' || *p < '1' || *p > '9') return 0;
    size_t digits = strspn(p, "0123456789");
    return digits >= 10 && digits <= 30 && !p[digits] ? pid : 0;
}

// The shared window, or NULL (then the ranks exchange messages): VITMAE_REDUCE=messages on any rank,
// not every rank on one machine, too little room where OpenMPI backs the window (shm_window_dir), a file
// size limit (ulimit -f) below the window's file, a rank that does not see rank 0's folder there, or MPI
// could not make it. Collective over the job;
// every rank gets the same answer. (OpenMPI's window does not fail on every rank when one rank's
// ftruncate of its file fails: the others wait in it for ever. So the limits are checked first.)
// The folder whose file backs OpenMPI's shared window: its osc/sm component's osc_sm_backing_directory,
// /dev/shm on Linux unless set. Seen on Debian 12's OpenMPI 4.1 (docs/distributed.md): each rank
// maps DIR/osc_sm.<host>.<job>.<rank>.<communicator>, unlinked once every rank has it, so that
// it holds room without a name in DIR; the session folder under TMPDIR holds only PMIx's segments.
// Read as OpenMPI has it, through MPI's tool interface (MPI_T): set by mpirun --mca, by
// OMPI_MCA_osc_sm_backing_directory or in an MCA parameter file ($HOME/.openmpi/mca-params.conf,
// /etc/openmpi/openmpi-mca-params.conf), which the variable alone missed. Without MPI_T's answer (an
// MPI without the variable): the environment's value, else /dev/shm. dir: n bytes.
static void shm_window_dir(char *dir, size_t n) {
    const char *env = getenv("OMPI_MCA_osc_sm_backing_directory");
    snprintf(dir, n, "%s", env && *env ? env : "/dev/shm");
    int provided, index, count;
    MPI_T_cvar_handle h;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return;
    if (MPI_T_cvar_get_index("osc_sm_backing_directory", &index) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS) {
        char value[4096] = "";   // OpenMPI 4.1 gives a string's count as 2048
        if (count > 0 && (size_t)count < sizeof value && MPI_T_cvar_read(h, value) == MPI_SUCCESS && value[0]) {
            value[count] = 0;
            snprintf(dir, n, "%s", value);
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
}

static GradShared *shared_create(GradReduce *gr) {
    const char *mode = getenv("VITMAE_REDUCE");
    int want = !(mode && !strcmp(mode, "messages")), all_want = 0;
    MPI_Allreduce(&want, &all_want, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_want) return NULL;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    int halves = gr->count > 1 ? 2 : 1;
    size_t stride = (gr->n + 15) & ~(size_t)15;   // each half starts on 64 bytes
    MPI_Aint bytes = (MPI_Aint)((size_t)halves * stride * sizeof(float));
    char dir[4096];
    shm_window_dir(dir, sizeof dir);
    double room;
    if (file_free_bytes(dir, &room) != 0) room = 0.0;
    // Several jobs may share the folder: ask for twice what the window needs. The file size limit must
    // allow the window's whole file (all ranks' segments, with room for its bookkeeping).
    struct rlimit fsize;
    int fits = getrlimit(RLIMIT_FSIZE, &fsize) != 0 || fsize.rlim_cur == RLIM_INFINITY ||
               (double)fsize.rlim_cur >= 2.0 * (double)bytes * g_size + 1048576.0;
    // Every rank must see rank 0's folder: a rank in a mount namespace of its own (a container with a
    // private /dev/shm on the same host) failed its open of the others' files and left the window, and
    // the ranks that stayed in it waited for ever. Rank 0 makes a file there, the others look for it.
    char probe[4096 + 64 + FILE_HOST_MAX] = "";
    int probe_fd = -1;
    if (g_rank == 0) {
        // The host and pid: a probe that a kill of rank 0 left is removed by the next job's rank 0 on this
        // host once that process is gone (probe_leftover); the time too: a stale file of an earlier job
        // with this pid is no clash.
        char host[FILE_HOST_MAX];
        file_host_name(host, sizeof host);
        file_sweep_dead(dir, probe_leftover);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(probe, sizeof probe, "%s/vitmae-window-probe.%s.%ld.%ld%09ld", dir, host, (long)getpid(),
                 (long)now.tv_sec, (long)now.tv_nsec);
        probe_fd = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (probe_fd < 0) probe[0] = 0;
    }
    MPI_Bcast(probe, (int)sizeof probe, MPI_CHAR, 0, MPI_COMM_WORLD);
    struct stat seen;
    int sees = probe[0] && stat(probe, &seen) == 0;
    int ok = node_size == g_size && room >= 2.0 * (double)bytes * g_size && fits, all_ok = 0;
    ok = ok && sees;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (probe_fd >= 0) { close(probe_fd); unlink(probe); }   // every rank has looked
    GradShared *sh = all_ok ? calloc(1, sizeof *sh) : NULL;
    if (sh) {
        sh->left = calloc((size_t)g_size, sizeof *sh->left);
        sh->right = calloc((size_t)g_size, sizeof *sh->right);
        // The threads' rows for every step, allocated here where the ranks agree (a step allocates nothing).
        sh->rows_threads = omp_get_max_threads();
        sh->rows = malloc((size_t)sh->rows_threads * g_size * SHARED_BLOCK * sizeof(float));
    }
    ok = sh && sh->left && sh->right && sh->rows;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {   // messages then: the same bits
        if (sh) { free(sh->left); free(sh->right); free(sh->rows); free(sh); }
        MPI_Comm_free(&node);
        return NULL;
    }
    sh->node = node;
    // Each rank's segment in its own pages (first touched by that rank: its own memory node).
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    float *mine = NULL;
    ok = MPI_Win_allocate_shared(bytes, sizeof(float), info, node, &mine, &sh->win) == MPI_SUCCESS;
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(node, MPI_ERRORS_ARE_FATAL);   // from here as every other call: fatal
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        free(sh->left); free(sh->right); free(sh->rows); free(sh);
        MPI_Comm_free(&node);
        return NULL;
    }
    for (int r = 0; r < g_size; r++) {
        MPI_Aint size;
        int disp;
        float *base;
        MPI_Win_shared_query(sh->win, r, &size, &disp, &base);
        sh->left[r] = base;
        sh->right[r] = halves == 2 ? base + stride : NULL;
    }
    // One passive epoch for the window's life: loads and stores are plain, MPI_Win_sync orders them.
    MPI_Win_lock_all(MPI_MODE_NOCHECK, sh->win);
    return sh;
}

static int init_as(GradReduce *gr, int groups, size_t n, int r, int N, int own_tree, char *err, size_t errlen);

static int init(GradReduce *gr, int groups, size_t n, int own_tree, char *err, size_t errlen) {
    int rc = init_as(gr, groups, n, g_rank, g_size, own_tree, err, errlen);
    if (!g_active || g_size == 1) return rc;
    // Collective from here: a rank that failed still attends.
    int ok = rc == 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (ok) {
            grad_reduce_free(gr);
            snprintf(err, errlen, "another rank is out of memory for its gradient buffers");
        }
        return -1;
    }
    gr->shared = shared_create(gr);
    if (gr->shared) {   // node[0] and the gradient live in the window; the received slices are not needed
        if (gr->depth > 0) {
            free(gr->node[0]);
            gr->node[0] = gr->shared->right[g_rank];
        }
        free(gr->slices);
        gr->slices = NULL;
        gr->grads = gr->shared->left[g_rank];
    }
    return 0;
}

int dist_tree_depth(int count) {
    int depth = 0;
    while ((1 << depth) < count) depth++;
    return depth;
}

size_t grad_reduce_floats(int groups, int N, size_t n) {
    return ((size_t)dist_tree_depth(groups / N) + (N > 1)) * n;
}

int grad_reduce_init(GradReduce *gr, int groups, size_t n, char *err, size_t errlen) {
    return init(gr, groups, n, 1, err, errlen);
}

int grad_reduce_init_top(GradReduce *gr, int groups, size_t n, char *err, size_t errlen) {
    return init(gr, groups, n, 0, err, errlen);
}

float *grad_reduce_grads(const GradReduce *gr, float *own) { return gr->shared ? gr->grads : own; }

int grad_reduce_init_as(GradReduce *gr, int groups, size_t n, int r, int N, char *err, size_t errlen) {
    return init_as(gr, groups, n, r, N, 1, err, errlen);
}

// own_tree 0: no buffers for the rank's own tree (its node[] stays NULL but for node[0] under shared
// memory, grad_reduce_init_top).
static int init_as(GradReduce *gr, int groups, size_t n, int r, int N, int own_tree, char *err, size_t errlen) {
    memset(gr, 0, sizeof *gr);
    gr->groups = groups;
    gr->count = groups / N;
    gr->first = r * gr->count;
    gr->n = n;
    gr->depth = dist_tree_depth(gr->count);
    gr->node = calloc((size_t)gr->depth + 1, sizeof *gr->node);
    gr->slice_off = calloc((size_t)N + 1, sizeof *gr->slice_off);
    int ok = gr->node && gr->slice_off;
    int ranks = N > g_size ? N : g_size;
    if (ok && ranks > 64) {   // combine's per-rank status and counts past its stack arrays
        gr->ranks_status = malloc((size_t)ranks * 5 * sizeof(double));
        gr->ranks_counts = malloc((size_t)ranks * 4 * sizeof(int));
        ok = gr->ranks_status && gr->ranks_counts;
    }
    for (int i = 0; ok && own_tree && i < gr->depth; i++) ok = (gr->node[i] = cpu_calloc_big(n, sizeof(float))) != NULL;
    // Slices of the gradient, one per rank, boundaries at multiples of 16 floats (64 bytes).
    for (int i = 0; ok && i <= N; i++) gr->slice_off[i] = i == N ? n : ((size_t)i * n / N) & ~(size_t)15;
    if (ok && N > 1) {
        size_t mine = gr->slice_off[r + 1] - gr->slice_off[r];
        ok = (gr->slices = malloc(((size_t)N * mine + 1) * sizeof(float))) != NULL;
    }
    if (!ok) {
        grad_reduce_free(gr);
        snprintf(err, errlen, "out of memory for %d gradient buffers of %zu MB", gr->depth + 1, n * sizeof(float) >> 20);
        return -1;
    }
    return 0;
}

void grad_reduce_free(GradReduce *gr) {
    if (gr->node)
        for (int i = gr->shared ? 1 : 0; i < gr->depth; i++) free(gr->node[i]);
    if (gr->extra)
        for (int i = 0; gr->extra[i]; i++) free(gr->extra[i]);
    free(gr->extra);
    free(gr->leaf);
    free(gr->losses);
    shared_free(gr->shared);
    free(gr->node);
    free(gr->slices);
    free(gr->ranks_status);
    free(gr->ranks_counts);
    free(gr->slice_off);
    memset(gr, 0, sizeof *gr);
}

typedef struct {
    GradReduce *gr;
    GroupFn fn;         // one group at a time, or
    GroupsFn many;      // gr->width groups at once (grad_reduce_at_once)
    void *ctx;
    int failed;
    // 1: leave the root's halves in dst and node[0]; 2: also leave the root's right child's halves in
    // node[0] and node[1] (it has two groups or more). grad_reduce_step's last pass adds them.
    int root_apart;
    float fold_scale;   // groups at once: the scaling the chunk's group function applies (1: none)
    char *err;
    size_t errlen;
} LocalTree;

static void add_into(float *a, const float *b, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] += b[i];
}

// The gradient buffers of the leaves of node [l, r) (sum into dst) as local_node hands them out:
// leaf l gets dst, the leaves of a right child at `level` node[level].
static void chunk_buffers(const GradReduce *gr, int l, int r, int level, float *dst, float **leaf, int l0) {
    if (r - l == 1) { leaf[l - l0] = dst; return; }
    int m = l + (r - l) / 2;
    chunk_buffers(gr, l, m, level + 1, dst, leaf, l0);
    chunk_buffers(gr, m, r, level + 1, gr->node[level], leaf, l0);
}

// local_node's adds over a chunk (leaves l0...), as a SumTree: the same adds in the same order (the right
// spine's kept apart as local_node keeps them).
static void chunk_plan(const LocalTree *lt, int l0, int l, int r, int level, int right_spine, SumTree *t) {
    if (r - l == 1) return;
    int m = l + (r - l) / 2;
    chunk_plan(lt, l0, l, m, level + 1, 0, t);
    chunk_plan(lt, l0, m, r, level + 1, right_spine, t);
    if (!(right_spine && level < lt->root_apart)) {
        t->dst[t->nadd] = (unsigned char)(l - l0);
        t->src[t->nadd++] = (unsigned char)(m - l0);
    }
}

// The loss of node [l, r): local_node's sums.
static double chunk_loss(const float *losses, int l0, int l, int r) {
    if (r - l == 1) return losses[l - l0];
    int m = l + (r - l) / 2;
    double left = chunk_loss(losses, l0, l, m), right = chunk_loss(losses, l0, m, r);
    return left + right;
}

// The node [l, r) of gr->width groups computed at once (docs/distributed.md, "Groups at once"): every
// leaf needs its own buffer. A leaf keeps the one local_node would give it unless a later leaf of the
// chunk gets the same node[] buffer (local_node reuses it once added); then it takes one of
// gr->extra. So the right spine keeps node[0], node[1] for grad_reduce_step's last pass. The group
// function does local_node's adds itself (the tree passed to it), and the scaling too when the chunk is
// the whole step (lt->fold_scale): the same float operations on the same values, the same bits.
static void chunk_node(LocalTree *lt, int l, int r, int level, int right_spine, float *dst, double *loss) {
    GradReduce *gr = lt->gr;
    int w = r - l, used_extra = 0;
    chunk_buffers(gr, l, r, level, dst, gr->leaf, l);
    for (int i = w - 1; i >= 0; i--)
        for (int j = i + 1; j < w; j++)
            if (gr->leaf[j] == gr->leaf[i]) { gr->leaf[i] = gr->extra[used_extra++]; break; }
    SumTree t;
    memset(&t, 0, sizeof t);
    t.n = w;
    chunk_plan(lt, l, l, r, level, right_spine, &t);
    t.scale = lt->fold_scale;
    sumtree_finish(&t);
    if (lt->many(lt->ctx, l, w, gr->leaf, &t, gr->losses, lt->err, lt->errlen)) { lt->failed = 1; return; }
    *loss = chunk_loss(gr->losses, l, l, r);
}

// The node [l, r) of the tree over this rank's groups, summed into dst: a leaf runs its group with
// dst as the gradient buffer; an inner node sums its left child into dst, its right child into
// node[level] (free at this depth), and adds. No gradient is copied. Its loss goes to *loss.
static void local_node(LocalTree *lt, int l, int r, int level, int right_spine, float *dst, double *loss) {
    GradReduce *gr = lt->gr;
    *loss = 0.0;
    if (lt->failed) return;
    if (lt->many && r - l == gr->width) { chunk_node(lt, l, r, level, right_spine, dst, loss); return; }
    if (r - l == 1) {
        float v = 0.0f;
        if (lt->fn(lt->ctx, l, dst, &v, lt->err, lt->errlen)) lt->failed = 1;
        *loss = v;
        return;
    }
    int m = l + (r - l) / 2;
    double left_loss, right_loss;
    local_node(lt, l, m, level + 1, 0, dst, &left_loss);
    local_node(lt, m, r, level + 1, right_spine, gr->node[level], &right_loss);
    if (right_spine && level < lt->root_apart) { *loss = left_loss + right_loss; return; }
    double t0 = omp_get_wtime();
    if (!lt->failed) add_into(dst, gr->node[level], gr->n);
    gr->reduce_s += omp_get_wtime() - t0;
    *loss = left_loss + right_loss;
}

static int local_tree(GradReduce *gr, float *grads, GroupFn fn, GroupsFn many, void *ctx, int root_apart,
                      float fold_scale, double *loss, char *err, size_t errlen) {
    LocalTree lt = {gr, fn, many, ctx, 0, root_apart, fold_scale, err, errlen};
    local_node(&lt, gr->first, gr->first + gr->count, 0, 1, grads, loss);
    return lt.failed ? -1 : 0;
}

int grad_reduce_local(GradReduce *gr, float *grads, GroupFn fn, void *ctx, double *loss, char *err, size_t errlen) {
    return local_tree(gr, grads, fn, NULL, ctx, 0, 1.0f, loss, err, errlen);
}

int grad_reduce_local_at_once(GradReduce *gr, float *grads, GroupsFn fn, void *ctx, double *loss, char *err,
                              size_t errlen) {
    return local_tree(gr, grads, NULL, fn, ctx, 0, 1.0f, loss, err, errlen);
}

// The top of the tree for the floats [lo, hi) (this rank's slice), in shared memory: rank r's node is
// left[r] + right[r] (the root add of its local tree), the N rank nodes are added in the pairwise
// tree (the order of tree_sum_floats), scaled, and the result is stored into every rank's left half
// (its gradient buffer). Only this rank touches [lo, hi) of any rank's halves until the barrier that
// follows, so the stores need no lock. The same float operations as the message exchange (add_into,
// tree_sum_floats, the scaling), so the same bits. Blocks of SHARED_BLOCK floats keep the N partial
// rows in the L1 cache.
static void shared_combine(const GradShared *sh, int N, size_t lo, size_t hi, float scale) {
    size_t nblocks = (hi - lo + SHARED_BLOCK - 1) / SHARED_BLOCK;
    int threads = omp_get_max_threads() < sh->rows_threads ? omp_get_max_threads() : sh->rows_threads;
    #pragma omp parallel num_threads(threads)
    {
        float *rows = sh->rows + (size_t)omp_get_thread_num() * N * SHARED_BLOCK;
        #pragma omp for schedule(static)
        for (size_t b = 0; b < nblocks; b++) {
            size_t at = lo + b * SHARED_BLOCK, len = hi - at < SHARED_BLOCK ? hi - at : SHARED_BLOCK;
            for (int r = 0; r < N; r++) {
                float *row = rows + (size_t)r * SHARED_BLOCK;
                const float *a = sh->left[r] + at;
                if (sh->right[r]) {
                    const float *c = sh->right[r] + at;
                    for (size_t i = 0; i < len; i++) row[i] = a[i] + c[i];
                } else {
                    memcpy(row, a, len * sizeof(float));
                }
            }
            for (int step = 1; step < N; step *= 2)
                for (int j = 0; j + step < N; j += 2 * step) {
                    float *x = rows + (size_t)j * SHARED_BLOCK;
                    const float *y = rows + (size_t)(j + step) * SHARED_BLOCK;
                    for (size_t i = 0; i < len; i++) x[i] += y[i];
                }
            for (size_t i = 0; i < len; i++) rows[i] *= scale;
            for (int r = 0; r < N; r++) memcpy(sh->left[r] + at, rows, len * sizeof(float));
        }
    }
}

// A step failed on some ranks (all: the status exchange, every rank's failure flag at [4 * r + 1]):
// each failed rank's reason goes to every rank, and one whose reason a lower failed rank has too
// stops being a failed rank here (*failed_here 0), so that a cause every rank met alike (the data
// folder gone) is said once, by the lowest, as docs/distributed.md says; it was said once per rank.
// Collective: every rank calls it once the exchange has shown a failure. Reasons compared in their
// first DIST_REASON_MAX - 1 bytes; out of memory, nothing compared (each says its own).
#define DIST_REASON_MAX 1024
static void said_by_lower_rank(const double *all, int *failed_here, const char *err) {
    int N = g_size;
    char *reasons = malloc((size_t)N * DIST_REASON_MAX), mine[DIST_REASON_MAX] = "";
    int ok = reasons != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);   // every rank gathers, or none
    if (all_ok) {
        if (*failed_here) snprintf(mine, sizeof mine, "%s", err);   // cut to the first DIST_REASON_MAX - 1 bytes
        MPI_Allgather(mine, DIST_REASON_MAX, MPI_CHAR, reasons, DIST_REASON_MAX, MPI_CHAR, MPI_COMM_WORLD);
        for (int r = 0; r < g_rank && *failed_here; r++)
            if (all[4 * r + 1] != 0.0 && !strcmp(reasons + (size_t)r * DIST_REASON_MAX, mine)) *failed_here = 0;
    }
    free(reasons);
}

// The ranks' part of a step, once this rank's node is summed: the status exchange, then the top of the
// tree (docs/distributed.md). The node is in grads; under shared memory with two groups or more its
// halves are in grads and node[0] (grad_reduce_right); one process leaves its root apart as root_apart
// says (reduce_step).
static int combine(GradReduce *gr, float *grads, int root_apart, double node_loss, float *loss,
                   const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen) {
    const float *node = grads;
    double t0 = omp_get_wtime(), waited = 0.0;
    int N = g_size, me = g_rank;
    // Status first (loss, failure, stop wish and held notes of every rank), so that no rank enters the
    // gradient exchange when another cannot: a failure or a stop is seen by all ranks at the same step.
    double status[4] = {node_loss, (double)*failed_here, stop_wish && *stop_wish ? 1.0 : 0.0,
                        gr->notes_here ? 1.0 : 0.0};
    // Past 64 ranks the buffers made with gr (init_as: the ranks agreed on them there).
    double stack_status[4 * 64], *all = N <= 64 ? stack_status : gr->ranks_status;
    double rank_loss_stack[64], *rank_loss = N <= 64 ? rank_loss_stack : gr->ranks_status + (size_t)4 * N;
    if (gr->shared) MPI_Win_sync(gr->shared->win);   // this rank's gradient stores, before the others read
    // This exchange is where a rank that finished its groups first waits for the others.
    double tw = omp_get_wtime();
    if (g_active) MPI_Allgather(status, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD);
    else memcpy(all, status, sizeof status);
    waited = omp_get_wtime() - tw;
    gr->wait_s += waited;
    if (gr->shared) MPI_Win_sync(gr->shared->win);
    int failed_rank = -1;
    *stop = 0;
    gr->notes_any = 0;
    for (int i = 0; i < N; i++) {
        rank_loss[i] = all[4 * i];
        if (all[4 * i + 1] != 0.0 && failed_rank < 0) failed_rank = i;
        if (all[4 * i + 2] != 0.0) *stop = 1;
        if (all[4 * i + 3] != 0.0) gr->notes_any = 1;
    }
    *loss = (float)(tree_sum_doubles(rank_loss, N) / gr->groups);
    if (failed_rank >= 0) {
        if (N > 1 && g_active) said_by_lower_rank(all, failed_here, err);
        if (!*failed_here) snprintf(err, errlen, "rank %d failed", failed_rank);
        gr->reduce_s += omp_get_wtime() - t0 - waited;
        return -1;
    }
    const float scale = 1.0f / (float)gr->groups;   // a power of two: exact
    if (N == 1 && root_apart == 2) {   // (left + (right.left + right.right)) / G in one pass
        const float *rl = gr->node[0], *rr = gr->node[1];
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < gr->n; i++) grads[i] = (grads[i] + (rl[i] + rr[i])) * scale;
    } else if (N == 1 && root_apart) {   // the root add and the scaling in one pass: (left + right) / G
        const float *right = gr->node[0];
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < gr->n; i++) grads[i] = (grads[i] + right[i]) * scale;
    } else if (N == 1) {
        // root_apart is 0 only with one group in all (count = groups / N: scale is exactly 1, and the
        // group's gradient is already the mean) or with every group at once (scaled by the group
        // function). Nothing to do.
    } else if (gr->shared) {
        // Rank i combines slice i of every rank's node and stores it into every rank's gradient;
        // after the barrier every rank holds the whole gradient.
        shared_combine(gr->shared, N, gr->slice_off[me], gr->slice_off[me + 1], scale);
        MPI_Win_sync(gr->shared->win);
        MPI_Barrier(gr->shared->node);
        MPI_Win_sync(gr->shared->win);
    } else {
        // Reduce-scatter: rank i receives slice i of every rank's node, sums the N of them in the
        // top of the tree, scales; then every rank gathers every slice.
        size_t lo = gr->slice_off[me], mine = gr->slice_off[me + 1] - lo;
        int cnt_stack[4 * 64], *cnt = N <= 64 ? cnt_stack : gr->ranks_counts;
        int *scount = cnt, *sdisp = cnt + N, *rcount = cnt + 2 * N, *rdisp = cnt + 3 * N;
        for (int i = 0; i < N; i++) {
            scount[i] = (int)(gr->slice_off[i + 1] - gr->slice_off[i]);
            sdisp[i] = (int)gr->slice_off[i];
            rcount[i] = (int)mine;
            rdisp[i] = (int)((size_t)i * mine);
        }
        MPI_Alltoallv(node, scount, sdisp, MPI_FLOAT, gr->slices, rcount, rdisp, MPI_FLOAT, MPI_COMM_WORLD);
        tree_sum_floats(gr->slices, mine, N, mine);
        float *dst = grads + lo;
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < mine; i++) dst[i] = gr->slices[i] * scale;
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, grads, scount, sdisp, MPI_FLOAT, MPI_COMM_WORLD);
    }
    gr->reduce_s += omp_get_wtime() - t0 - waited;
    return 0;
}

static int reduce_step(GradReduce *gr, float *grads, GroupFn fn, GroupsFn many, void *ctx, float *loss,
                       const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen) {
    // A programming error, not a user's: every rank runs the same build and meets it alike, and no
    // input reaches it, so nothing to agree on (dist_abort; docs/distributed.md, "Faults").
    if (gr->shared && grads != gr->grads) {
        fprintf(stderr, "vitmae: rank %d: grad_reduce_step: grads must be grad_reduce_grads()\n", g_rank);
        dist_abort(70);
    }
    // One process or shared memory: the local root add is fused into the pass that follows; with one
    // process and three groups or more, the add of the root's right child too (one pass over the
    // gradients fewer: docs/distributed.md).
    int root_apart = gr->count > 1 && (g_size == 1 || gr->shared);
    if (root_apart && g_size == 1 && gr->count - gr->count / 2 >= 2) root_apart = 2;
    // One process computing all its groups at once: the group function adds the whole tree and scales
    // (the last pass below then has nothing left to do).
    float fold_scale = 1.0f;
    if (many && g_size == 1 && gr->width == gr->count) {
        root_apart = 0;
        fold_scale = 1.0f / (float)gr->groups;
    }
    double node_loss = 0.0;
    *failed_here = local_tree(gr, grads, fn, many, ctx, root_apart, fold_scale, &node_loss, err, errlen) != 0;
    return combine(gr, grads, root_apart, node_loss, loss, stop_wish, stop, failed_here, err, errlen);
}

float *grad_reduce_right(const GradReduce *gr) { return gr->shared && gr->depth > 0 ? gr->node[0] : NULL; }

int grad_reduce_combine(GradReduce *gr, float *grads, double node_loss, float *loss,
                        const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err,
                        size_t errlen) {
    if (g_size == 1 || (gr->shared && grads != gr->grads)) {   // a programming error, as in reduce_step
        fprintf(stderr, "vitmae: rank %d: grad_reduce_combine: one process, or grads not grad_reduce_grads()\n",
                g_rank);
        dist_abort(70);
    }
    return combine(gr, grads, grad_reduce_right(gr) != NULL, node_loss, loss, stop_wish, stop, failed_here, err,
                   errlen);
}

int grad_reduce_step(GradReduce *gr, float *grads, GroupFn fn, void *ctx, float *loss,
                     const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err, size_t errlen) {
    return reduce_step(gr, grads, fn, NULL, ctx, loss, stop_wish, stop, failed_here, err, errlen);
}

int grad_reduce_step_at_once(GradReduce *gr, float *grads, GroupsFn fn, void *ctx, float *loss,
                             const volatile sig_atomic_t *stop_wish, int *stop, int *failed_here, char *err,
                             size_t errlen) {
    return reduce_step(gr, grads, NULL, fn, ctx, loss, stop_wish, stop, failed_here, err, errlen);
}

size_t grad_reduce_at_once_floats(int width, size_t n) {
    int log2w = 0;
    while ((1 << log2w) < width) log2w++;
    return (size_t)(width - 1 - log2w) * n;
}

int grad_reduce_at_once(GradReduce *gr, int width, char *err, size_t errlen) {
    if (!is_pow2(width) || gr->count % width || width > SUMTREE_MAX) {   // a programming error, not a user's
        snprintf(err, errlen, "%d groups at once do not divide this rank's %d (or are more than %d)", width,
                 gr->count, SUMTREE_MAX);
        return -1;
    }
    int extras = (int)(grad_reduce_at_once_floats(width, 1));
    gr->width = width;
    gr->leaf = calloc((size_t)width, sizeof *gr->leaf);
    gr->losses = calloc((size_t)width, sizeof *gr->losses);
    gr->extra = calloc((size_t)extras + 1, sizeof *gr->extra);
    int ok = gr->leaf && gr->losses && gr->extra;
    for (int i = 0; ok && i < extras; i++) ok = (gr->extra[i] = cpu_calloc_big(gr->n, sizeof(float))) != NULL;
    if (!ok) {
        snprintf(err, errlen, "out of memory for %d more gradient buffers of %zu MB", extras, gr->n * sizeof(float) >> 20);
        return -1;   // grad_reduce_free releases what was allocated
    }
    return 0;
}
