/* bench_experts.c - what predict costs with experts (issue 27's goal: with
 * k rules, at most k times one rule's CPU plus 10 %): a binary pa1 champion
 * with 0 to 8 pa1 challengers, 2^20 weights, 32 features an example, each
 * taught 20,000 examples; then CPU time per predict of the k rules one
 * after the other (pc_model_predict k times: what k rules cost, cache
 * misses included, since their weights do not all fit the cache) and of
 * the combination (pcd_challengers_predict: the same k predictions, the
 * weights, the vote), median of 5 runs, alternated.
 *
 *   build/bench/bench_experts [predicts]        (default 200000)
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "daemon/model/challengers.h"

enum { FEATURES = 32, TRAIN = 20000, RUNS = 5 };

static uint64_t rng = 0x2545f4914f6cdd1dull;

static void example(pc_svec *x, pc_label *y)
{
    pc_svec_clear(x);
    double dot = 0;
    for (int k = 0; k < FEATURES; k++) {
        uint32_t i = (uint32_t)(bench_xorshift(&rng) % (1u << 20));
        double v = (double)(bench_xorshift(&rng) % 2001) / 1000.0 - 1;
        pc_svec_push(x, i, v);
        dot += (i & 1 ? 1 : -1) * v;
    }
    pc_error err;
    pc_svec_normalize(x, 1u << 20, &err);
    y->y = dot >= 0 ? 1 : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    pc_svec *probe = calloc(1024, sizeof *probe);
    pc_label y;
    for (int i = 0; i < 1024; i++) {
        pc_svec_init(&probe[i]);
        example(&probe[i], &y);
    }
    printf("experts k  ns/predict, k rules  ns/predict, combined  ratio (goal: at most 1.10)\n");
    for (size_t k = 0; k <= PCP_CHALLENGERS_MAX; k++) {
        pc_model_config cfg;
        pc_model_config_default(&cfg, 1u << 20);
        cfg.rule = pc_rule_find("pa1");
        pc_params_default(cfg.rule, &cfg.params);
        pc_model *m;
        pc_error err;
        if (pc_model_new(&cfg, &m, &err) != PC_OK)
            return 1;
        pcp_challenger ch[PCP_CHALLENGERS_MAX];
        for (size_t i = 0; i < k; i++)
            ch[i] = (pcp_challenger){.c = cfg};
        pcp_experts_config xc = {.mode = PCP_EXPERTS_WMA, .eta = 0.1, .seed = 1};
        pcd_challengers *cs = NULL;
        pcp_error perr;
        if (k && pcd_challengers_create(&cs, m, ch, k, &xc, &perr) != PCP_OK)
            return 1;
        pc_svec x;
        pc_svec_init(&x);
        for (int t = 0; t < TRAIN; t++) {
            pc_outcome o;
            example(&x, &y);
            pc_model_label(m, &x, &y, &o, &err);
            pcd_challengers_learn(cs, &x, &y, &o, NULL);
        }
        double runs[2][RUNS];
        volatile double sink = 0;
        for (int r = 0; r < RUNS; r++)
            for (int combined = 0; combined < 2; combined++) {
                double t0 = bench_cpu();
                for (long i = 0; i < n; i++) {
                    pc_prediction p;
                    if (combined && cs) {
                        size_t who;
                        pcd_challengers_predict(cs, m, &probe[i & 1023], &p, &who);
                        sink += p.score;
                        continue;
                    }
                    pc_model_predict(m, &probe[i & 1023], &p, NULL);
                    sink += p.score;
                    for (size_t j = 0; j < k; j++) {
                        pc_model_predict(cs->ch[j].model, &probe[i & 1023], &p, NULL);
                        sink += p.score;
                    }
                }
                runs[combined][r] = (bench_cpu() - t0) / (double)n * 1e9;
            }
        qsort(runs[0], RUNS, sizeof(double), cmp);
        qsort(runs[1], RUNS, sizeof(double), cmp);
        double both = cs ? runs[1][RUNS / 2] : runs[0][RUNS / 2];
        printf("%9zu  %19.1f  %20.1f  %5.2f\n", k + 1, runs[0][RUNS / 2], both,
               both / runs[0][RUNS / 2]);
        pc_svec_free(&x);
        pcd_challengers_free(cs);
        pc_model_free(m);
    }
    for (int i = 0; i < 1024; i++)
        pc_svec_free(&probe[i]);
    free(probe);
    return 0;
}
