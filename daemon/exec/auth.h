/* auth.h - the tokens `auth` accepts, each with a name (for logs) and the
 * rights it grants.  Read from auth.tokens_file or from a systemd credential
 * (auth.tokens_credential, in $CREDENTIALS_DIRECTORY); kept only as SHA-256
 * digests, compared in constant time, never logged (docs/security.md). */
#ifndef PCD_AUTH_H
#define PCD_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/config/config.h"

typedef struct pcd_auth pcd_auth;

#define PCD_TOKEN_MIN 16      /* bytes: shorter tokens are refused at load */
#define PCD_TOKEN_MAX 512
#define PCD_TOKEN_NAME_MAX 64

/* Loads the tokens cfg names.  0 with *out the set (NULL when cfg names no
 * tokens), or -1 with err saying which file and line is wrong (never the
 * token itself). */
int pcd_auth_load(const pcd_config *cfg, pcd_auth **out, char *err, size_t errlen);
void pcd_auth_free(pcd_auth *a);
size_t pcd_auth_count(const pcd_auth *a);
/* The entry token[0..len) matches: true with its name (valid until the set
 * is freed) and rights.  Every entry is compared, in constant time. */
bool pcd_auth_check(const pcd_auth *a, const void *token, size_t len, const char **name,
                    unsigned *rights);

#endif
