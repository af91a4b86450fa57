/* replies.h - the results of the administrative methods (and of label_batch
 * and save), packed after the caller's pcp_pack_response_ok.  Every map here
 * is packed from a table of its entries, so its size is counted, never typed. */
#ifndef PCD_REPLIES_H
#define PCD_REPLIES_H

#include <msgpack.h>
#include <stdint.h>

#include "daemon/model/registry.h"

struct pcd_server;

/* models: [name, ...] */
void pcd_reply_models(msgpack_packer *pk, pcd_model *const *all, size_t n);
/* info: the model's config, its stats and its snapshot state at unix time now. */
void pcd_reply_info(msgpack_packer *pk, const pcd_model *e, int64_t now);
/* weights: [{index, feature, weight}, ...] for the n (index, weight) pairs. */
void pcd_reply_weights(msgpack_packer *pk, const pcd_model *e, const uint32_t *idx,
                       const double *w, size_t n);
/* stats: the server's counters at unix time now. */
void pcd_reply_stats(msgpack_packer *pk, const struct pcd_server *srv, int64_t now);
/* label_batch: {examples, mistakes, updates, position}.  position, here and
 * below: the write's place in its model's log (position.h), NULL: nil. */
void pcd_reply_learned(msgpack_packer *pk, uint64_t examples, uint64_t mistakes, uint64_t updates,
                       const char *position);
/* save: {written} */
void pcd_reply_saved(msgpack_packer *pk, uint64_t written);
/* compare: the champion and its challengers side by side (challengers.h). */
void pcd_reply_compare(msgpack_packer *pk, const pcd_model *e);
/* predict's answer from experts: {label, score, expert}: the combined label
 * and score (experts.h), and the expert followed (0 the champion, 1 + i
 * challenger i) under `randomized`, nil under `weighted-majority`; extra:
 * the entries the caller packs after these (explain). */
struct pcd_challengers;
void pcd_reply_experts_prediction(msgpack_packer *pk, const pc_model *m,
                                  const struct pcd_challengers *cs, const pc_prediction *p,
                                  size_t who, uint32_t extra);
/* The entry "explain": the explanation xp holds of e's champion (a map for a
 * binary model, a list of the predicted class's and the runner-up's for a
 * multiclass one; docs/protocol.md, "Explanations"). */
struct pcd_explainer;
void pcd_reply_explanation(msgpack_packer *pk, const pcd_model *e,
                           const struct pcd_explainer *xp);
/* create, reset, promote: {what: name, position} ("created", "reset", "promoted") */
void pcd_reply_done(msgpack_packer *pk, const char *what, const char *name, const char *position);
/* drop: {dropped, snapshots_removed, position} */
void pcd_reply_dropped(msgpack_packer *pk, const char *name, uint64_t removed,
                       const char *position);

#endif
