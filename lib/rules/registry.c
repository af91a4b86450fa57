/* registry.c - the one table of every update rule.
 *
 * Adding a rule: write lib/rules/<name>.c defining `const pc_rule
 * pc_rule_<name>`, add it to lib/meson.build, and add one line here. */
#include "lib/rule.h"

extern const pc_rule pc_rule_perceptron;
/* group A (seeds 001-003, PA, ALMA) */

/* group B (seed 000) */

/* group C (seed 004) */
extern const pc_rule pc_rule_omm;
extern const pc_rule pc_rule_omm_naive;

/* group D (seed 002) */

const pc_rule *const pc_rule_registry[] = {
    &pc_rule_perceptron,
    /* group A */

    /* group B */

    /* group C */
    &pc_rule_omm,
    &pc_rule_omm_naive,

    /* group D */

    NULL,
};
