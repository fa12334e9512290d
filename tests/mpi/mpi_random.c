/* mpi_random.c — a seeded random program of MPI calls, checked call by
 * call against the same call made through PMPI_* (which the library does
 * not intercept):
 *
 *   mpi_random exact STEPS SEED [-1 [THREADS]]
 *     integer-valued floats: every compressed path of a lossless codec
 *     must return PMPI's bytes;
 *   mpi_random lossy STEPS SEED BOUND [THREADS]
 *     gradient-like floats: results identical on every rank of the
 *     communicator and finite; relative error of each call within BOUND
 *     of PMPI's sum (BOUND < 0: not checked, e.g. topk, whose residuals
 *     carry earlier calls' mass into unrelated later ones).
 *
 * Every rank draws the same program from SEED:
 *   - communicators made by MPI_Comm_dup, MPI_Comm_split (colours,
 *     reversed keys, MPI_UNDEFINED), MPI_Comm_split_type,
 *     MPI_Comm_create_group and MPI_Intercomm_create (whose calls must pass
 *     through), named "metrics" or "grads", and freed again (so handles
 *     are reused);
 *   - on them float allreduces and allgathers of counts 0, 1, around p and
 *     powers of two, up to 300000 floats, in place or not;
 *   - between them calls the library must pass through untouched (double
 *     and int sums, float MAX, a user op, MPI_Iallreduce).
 * Besides the result, each call must leave its send buffer as it was and
 * must not read its receive buffer (NaN there beforehand). THREADS
 * programs (default 1) run at once, each on its own duplicate of
 * MPI_COMM_WORLD (MPI_THREAD_MULTIPLE), with its communicators made
 * before the threads start. Programs nobody here wrote call MPI like
 * this; the tests of fixed calls do not. */
#include <pthread.h>
#include <stdatomic.h>

#include "mpi_check.h"

enum { SLOTS = 8, MAX_FLOATS = 300000, MAX_THREADS = 4 };

typedef struct {
    int live;       /* the same on every rank */
    MPI_Comm comm;  /* MPI_COMM_NULL on ranks outside it */
} slot;

static int is_inter(MPI_Comm comm)
{
    int flag = 0;
    MPI_Comm_test_inter(comm, &flag);
    return flag;
}

/* One program: its communicators (slot 0 its base, never freed) and its
 * random stream, the same draws on every rank. With THREADS > 1 each
 * thread runs its own on its own duplicate of MPI_COMM_WORLD. */
typedef struct {
    slot slots[SLOTS];
    uint64_t state;
    int steps;
    int fixed_comms; /* no communicator made or freed while it runs */
} program;

static int lossy;
static double bound;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long calls_checked;

static uint64_t draw(program *g, uint64_t n)
{
    const uint64_t x = data_next(&g->state); /* drawn whatever n is */
    return n ? x % n : 0;
}

static int pick_live(program *g, int allow_base)
{
    int live[SLOTS], n = 0;
    for (int i = allow_base ? 0 : 1; i < SLOTS; i++)
        if (g->slots[i].live) live[n++] = i;
    return n ? live[draw(g, (uint64_t)n)] : -1;
}

static int free_slot(const program *g)
{
    for (int i = 1; i < SLOTS; i++)
        if (!g->slots[i].live) return i;
    return -1;
}

/* Counts where the algorithms' chunking changes: 0, 1, around p, odd
 * sizes, powers of two and their neighbours, and large ones. */
static size_t draw_count(program *g, int p)
{
    const uint64_t a = draw(g, 8), b = draw(g, 70000), c = draw(g, 14);
    switch (a) {
    case 0: return b % 3;                            /* 0, 1, 2 */
    case 1: return (size_t)p - 1 + b % 3;            /* p - 1 .. p + 1 */
    case 2: return 1 + b % 1024;
    case 3: return ((size_t)1 << (4 + c)) - 1 + b % 3;
    case 4: return 1000 + b;
    case 5: return (size_t)p * (1 + b % 5000);       /* divisible by p */
    case 6: return MAX_FLOATS - b % 7;
    default: return 4096 + b % 20000;
    }
}

static void fill(float *x, size_t n, int rank, uint64_t seed)
{
    if (lossy) fill_gradient(x, n, rank, seed);
    else fill_integers(x, n, rank, seed);
}

static void fill_nan(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* CHECK from several threads: the failure count is shared. */
#define TCHECK(cond, ...)                      \
    do {                                       \
        if (!(cond)) {                         \
            pthread_mutex_lock(&fail_lock);    \
            CHECK(0, __VA_ARGS__);             \
            pthread_mutex_unlock(&fail_lock);  \
        }                                      \
    } while (0)

/* got against PMPI's want: bytes in exact mode; same on all ranks, finite
 * and within the bound in lossy mode (where compress is set). */
static void compare(const char *what, int step, size_t n, const float *want, const float *got,
                    int compress, MPI_Comm comm)
{
    calls_checked++;
    if (!lossy || !compress) {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) wrong += memcmp(&want[i], &got[i], sizeof *got) != 0;
        TCHECK(wrong == 0, "step %d %s n=%zu: %zu elements differ from PMPI's", step, what, n,
               wrong);
        return;
    }
    TCHECK(same_on_all_ranks(got, n * sizeof *got, comm), "step %d %s n=%zu: ranks differ", step,
           what, n);
    TCHECK(all_finite(got, n), "step %d %s n=%zu: not finite", step, what, n);
    if (bound >= 0) {
        double *exact = alloc_doubles(n);
        for (size_t i = 0; i < n; i++) exact[i] = want[i];
        const double err = relative_error(exact, got, n);
        free(exact);
        TCHECK(err <= bound, "step %d %s n=%zu: error %.4g > %.4g", step, what, n, err, bound);
    }
}

/* On an intercommunicator (no MPI_IN_PLACE there) each group gets the
 * other's sum, which the library must pass through untouched. */
static void op_allreduce(MPI_Comm comm, int step, int in_place, size_t n)
{
    int rank;
    const int inter = is_inter(comm);
    in_place = in_place && !inter;
    MPI_Comm_rank(comm, &rank);
    float *in = alloc_floats(n), *keep = alloc_floats(n), *got = alloc_floats(n);
    float *want = alloc_floats(n);
    fill(in, n, rank, (uint64_t)step);
    memcpy(keep, in, n * sizeof *in);
    PMPI_Allreduce(in, want, (int)n, MPI_FLOAT, MPI_SUM, comm);
    if (in_place) {
        memcpy(got, in, n * sizeof *in);
        MPI_Allreduce(MPI_IN_PLACE, got, (int)n, MPI_FLOAT, MPI_SUM, comm);
    } else {
        fill_nan(got, n);
        MPI_Allreduce(in, got, (int)n, MPI_FLOAT, MPI_SUM, comm);
        TCHECK(memcmp(in, keep, n * sizeof *in) == 0, "step %d allreduce n=%zu: sendbuf changed",
               step, n);
    }
    compare(inter ? "allreduce (intercommunicator)" : in_place ? "allreduce in place" : "allreduce",
            step, n, want, got, !inter, comm);
    free(in);
    free(keep);
    free(got);
    free(want);
}

static void op_allgather(MPI_Comm comm, int step, int in_place, size_t n)
{
    int rank, p;
    const int inter = is_inter(comm);
    in_place = in_place && !inter;
    MPI_Comm_rank(comm, &rank);
    if (inter) MPI_Comm_remote_size(comm, &p);
    else MPI_Comm_size(comm, &p);
    const size_t all = n * (size_t)p;
    float *block = alloc_floats(n), *keep = alloc_floats(n), *got = alloc_floats(all);
    float *want = alloc_floats(all);
    fill(block, n, rank, (uint64_t)step + 7);
    memcpy(keep, block, n * sizeof *block);
    PMPI_Allgather(block, (int)n, MPI_FLOAT, want, (int)n, MPI_FLOAT, comm);
    fill_nan(got, all);
    if (in_place) {
        memcpy(got + (size_t)rank * n, block, n * sizeof *block);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got, (int)n, MPI_FLOAT, comm);
    } else {
        MPI_Allgather(block, (int)n, MPI_FLOAT, got, (int)n, MPI_FLOAT, comm);
        TCHECK(memcmp(block, keep, n * sizeof *block) == 0,
               "step %d allgather n=%zu: sendbuf changed", step, n);
    }
    compare(inter ? "allgather (intercommunicator)" : in_place ? "allgather in place" : "allgather",
            step, all, want, got, !inter && getenv("GCMPI_ALLGATHER_CODEC") != NULL, comm);
    free(block);
    free(keep);
    free(got);
    free(want);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((float *)inout)[i] += ((const float *)in)[i];
}

/* A call that is not a float sum, or is nonblocking: PMPI's bytes. */
static void op_passed(MPI_Comm comm, int step, unsigned kind, size_t n)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    float *x = alloc_floats(n);
    fill_integers(x, n, rank, (uint64_t)step + 13);
    /* Room for n doubles holds n of every type used; small integers are
     * the same values as doubles and ints. */
    double *in = alloc_doubles(n), *want = alloc_doubles(n), *got = alloc_doubles(n);
    MPI_Datatype type = MPI_FLOAT;
    MPI_Op op = MPI_SUM, user = MPI_OP_NULL;
    size_t size = sizeof(float);
    const char *what = "Iallreduce";
    memcpy(in, x, n * sizeof *x);
    if (kind == 0) {
        what = "double sum";
        type = MPI_DOUBLE;
        size = sizeof(double);
        for (size_t i = 0; i < n; i++) in[i] = x[i];
    } else if (kind == 1) {
        what = "int sum";
        type = MPI_INT;
        size = sizeof(int);
        for (size_t i = 0; i < n; i++) ((int *)(void *)in)[i] = (int)x[i];
    } else if (kind == 2) {
        what = "float max";
        op = MPI_MAX;
    } else if (kind == 3) {
        what = "float user op";
        MPI_Op_create(user_sum, 1, &user);
        op = user;
    }
    PMPI_Allreduce(in, want, (int)n, type, op, comm);
    if (kind >= 4) {
        MPI_Request req;
        MPI_Iallreduce(in, got, (int)n, type, op, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Allreduce(in, got, (int)n, type, op, comm);
    }
    if (user != MPI_OP_NULL) MPI_Op_free(&user);
    calls_checked++;
    TCHECK(memcmp(want, got, n * size) == 0, "step %d %s n=%zu: differs from PMPI's", step, what,
           n);
    free(x);
    free(in);
    free(want);
    free(got);
}

/* A new communicator from a live one's members, into a free slot. */
static void op_create(program *g, int parent, int to)
{
    MPI_Comm pc = g->slots[parent].comm, out = MPI_COMM_NULL;
    const unsigned how = (unsigned)draw(g, 5);
    const uint64_t salt = draw(g, 1u << 30);
    const int colours = 1 + (int)draw(g, 3);
    const int undefined_at = (int)draw(g, 6); /* a parent rank left out, if < its size */
    const int reversed = (int)draw(g, 2);
    const unsigned name = (unsigned)draw(g, 6);
    if (pc != MPI_COMM_NULL) {
        int r, p;
        MPI_Comm_rank(pc, &r);
        MPI_Comm_size(pc, &p);
        if (how == 0 || is_inter(pc)) {
            MPI_Comm_dup(pc, &out); /* the one way here to make another intercommunicator */
        } else if (how == 1) {
            int colour = (int)((salt + (uint64_t)r * 2654435761u) % (uint64_t)colours);
            if (r == undefined_at && p > 2) colour = MPI_UNDEFINED;
            MPI_Comm_split(pc, colour, reversed ? p - r : r, &out);
        } else if (how == 2) {
            MPI_Comm_split_type(pc, MPI_COMM_TYPE_SHARED, reversed ? p - r : r, MPI_INFO_NULL,
                                &out);
        } else if (how == 3) {
            /* An intercommunicator between the parent's two halves. */
            if (p > 1) {
                MPI_Comm half;
                const int low = r < p / 2;
                MPI_Comm_split(pc, low, r, &half);
                MPI_Intercomm_create(half, 0, pc, low ? p / 2 : 0, 78, &out);
                MPI_Comm_free(&half);
            }
        } else {
            /* The parent's even ranks (at least one): only they call. */
            MPI_Group all, evens;
            MPI_Comm_group(pc, &all);
            int n = (p + 1) / 2, *ranks = malloc((size_t)n * sizeof *ranks);
            if (!ranks) abort();
            for (int i = 0; i < n; i++) ranks[i] = 2 * i;
            MPI_Group_incl(all, n, ranks, &evens);
            if (r % 2 == 0) MPI_Comm_create_group(pc, evens, 77, &out);
            MPI_Group_free(&evens);
            MPI_Group_free(&all);
            free(ranks);
        }
    }
    g->slots[to] = (slot){.live = 1, .comm = out};
    if (out != MPI_COMM_NULL && name == 0) MPI_Comm_set_name(out, "grads");
    if (out != MPI_COMM_NULL && name == 1) MPI_Comm_set_name(out, "metrics");
}

static void op_free(program *g, int s)
{
    if (g->slots[s].comm != MPI_COMM_NULL) MPI_Comm_free(&g->slots[s].comm);
    g->slots[s].live = 0;
}

static void *run(void *arg)
{
    program *g = arg;
    for (int step = 0; step < g->steps; step++) {
        const unsigned op = (unsigned)draw(g, 16);
        if (op < 3 && g->fixed_comms) continue; /* made before the threads */
        if (op < 2) {
            const int to = free_slot(g);
            if (to >= 0) op_create(g, pick_live(g, 1), to);
            else op_free(g, pick_live(g, 0));
            continue;
        }
        if (op == 2) {
            const int s = pick_live(g, 0);
            if (s > 0) op_free(g, s);
            continue;
        }
        MPI_Comm comm = g->slots[pick_live(g, 1)].comm;
        /* Counts must agree on both sides of an intercommunicator: they
         * are drawn from the size of both groups together. */
        int p = 1;
        if (comm != MPI_COMM_NULL) MPI_Comm_size(comm, &p);
        if (comm != MPI_COMM_NULL && is_inter(comm)) {
            int remote;
            MPI_Comm_remote_size(comm, &remote);
            p += remote;
        }
        /* Drawn on every rank, members or not, so the stream stays shared. */
        const int in_place = (int)draw(g, 2);
        const unsigned kind = (unsigned)draw(g, 5);
        size_t n = draw_count(g, p);
        const size_t extra = draw(g, 3);
        if (op >= 12) n = n / (size_t)p + extra; /* each rank's block */
        if (comm == MPI_COMM_NULL) continue;
        if (op < 10) op_allreduce(comm, step, in_place, n);
        else if (op < 12) op_passed(comm, step, kind, n);
        else op_allgather(comm, step, in_place, n);
    }
    return NULL; /* main frees the communicators */
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "exact") && strcmp(argv[1], "lossy"))) {
        fprintf(stderr, "usage: mpi_random exact|lossy STEPS SEED [BOUND [THREADS]]\n");
        return 2;
    }
    const int threads = argc > 5 ? atoi(argv[5]) : 1;
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "mpi_random: THREADS must be 1 to %d\n", MAX_THREADS);
        return 2;
    }
    int provided = 0;
    MPI_Init_thread(&argc, &argv, threads > 1 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                    &provided);
    check_library_preloaded();
    lossy = strcmp(argv[1], "lossy") == 0;
    bound = arg_double(argc, argv, 4, -1.0);
    CHECK(threads == 1 || provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided");
    program prog[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    /* MPI_RANDOM_THREAD_COMMS set (to anything): threads make and free
     * communicators as they go, to reproduce the hazard below (not in CI). */
    const int thread_comms = getenv("MPI_RANDOM_THREAD_COMMS") != NULL;
    for (int t = 0; t < threads; t++) {
        prog[t] = (program){.steps = atoi(argv[2]),
                            .state = strtoull(argv[3], NULL, 10) + 1000003u * (uint64_t)t};
        prog[t].slots[0] = (slot){.live = 1, .comm = MPI_COMM_WORLD};
        if (t > 0) MPI_Comm_dup(MPI_COMM_WORLD, &prog[t].slots[0].comm);
        /* Threads only call collectives: Open MPI 4.1 can hang in
         * ompi_comm_nextcid when several threads make communicators at
         * once, and the library makes its own inside collectives
         * (README, Limits), so each program's are made here, one
         * program after the other. */
        if (threads > 1 && !thread_comms) {
            prog[t].fixed_comms = 1;
            for (int to; (to = free_slot(&prog[t])) >= 0;)
                op_create(&prog[t], pick_live(&prog[t], 1), to);
        }
    }
    if (threads == 1 || provided == MPI_THREAD_MULTIPLE) {
        for (int t = 1; t < threads; t++)
            if (pthread_create(&tid[t], NULL, run, &prog[t]) != 0) abort();
        run(&prog[0]);
        for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
    }
    for (int t = 0; t < threads; t++) {
        for (int s = 1; s < SLOTS; s++)
            if (prog[t].slots[s].live) op_free(&prog[t], s);
        if (t > 0) MPI_Comm_free(&prog[t].slots[0].comm);
    }
    unsigned long mine = calls_checked, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("random: %lu calls checked over all ranks\n", total);
    CHECK(total > 0, "no call was checked");
    return check_finish(lossy ? "random lossy" : "random exact");
}
