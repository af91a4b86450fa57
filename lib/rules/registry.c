/* registry.c - the one table of every update rule.
 *
 * Adding a rule: write lib/rules/<name>.c defining `const pc_rule
 * pc_rule_<name>` (a variant of an algorithm already here goes into that
 * algorithm's file, as pa1 and pa2 are in pa.c), add a new file to
 * lib/meson.build, and add one line here. */
#include "lib/rule.h"

extern const pc_rule pc_rule_perceptron;
/* seeds 001-003, PA, ALMA (tests/test_rules_margin_winnow_pa_alma.c) */
extern const pc_rule pc_rule_margin;
extern const pc_rule pc_rule_winnow;
extern const pc_rule pc_rule_pa;
extern const pc_rule pc_rule_pa1;
extern const pc_rule pc_rule_pa2;
extern const pc_rule pc_rule_alma;

/* seed 000 (tests/test_rules_max_cosine.c) */
extern const pc_rule pc_rule_romma;
extern const pc_rule pc_rule_aromma;
extern const pc_rule pc_rule_naromma;
extern const pc_rule pc_rule_cmcp;
extern const pc_rule pc_rule_mcp;

/* seed 004 (tests/test_rules_omm.c) */
extern const pc_rule pc_rule_omm;
extern const pc_rule pc_rule_omm_naive;
extern const pc_rule pc_rule_pumma; /* seed 004's benchmark (Ishibashi et al. 2008) */

/* seed 002 (tests/test_rules_greedy_fuzzy.c) */
extern const pc_rule pc_rule_greedy;
extern const pc_rule pc_rule_fuzzy;

const pc_rule *const pc_rule_registry[] = {
    &pc_rule_perceptron,
    &pc_rule_margin,
    &pc_rule_winnow,
    &pc_rule_pa,
    &pc_rule_pa1,
    &pc_rule_pa2,
    &pc_rule_alma,

    &pc_rule_romma,
    &pc_rule_aromma,
    &pc_rule_naromma,
    &pc_rule_cmcp,
    &pc_rule_mcp,

    &pc_rule_omm,
    &pc_rule_omm_naive,
    &pc_rule_pumma,

    &pc_rule_greedy,
    &pc_rule_fuzzy,

    NULL,
};
