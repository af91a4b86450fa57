/* auth.c - the token file: "NAME RIGHTS TOKEN" per line (see auth.h).
 *
 * Only SHA-256 digests of the tokens stay in memory, so a core dump or a
 * memory read does not give them away, and digests of equal length compare
 * in constant time (CRYPTO_memcmp) whatever the token's length.  A presented
 * token is compared with every entry, without stopping at a match, so the
 * time says nothing about which entry matched or how many bytes did.  The
 * file must not be readable by other users: it is a password file.
 */
#include "daemon/exec/auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/secret.h"
#include "lib/grow.h"
#include "proto/proto.h"

#define DIGEST 32

struct entry {
    char name[PCD_TOKEN_NAME_MAX + 1];
    unsigned rights;
    unsigned char digest[DIGEST];
};

struct pcd_auth {
    struct entry *v;
    size_t n;
};

static bool sha256(const void *p, size_t len, unsigned char out[DIGEST])
{
    unsigned int dl = 0;
    return EVP_Digest(p, len, out, &dl, EVP_sha256(), NULL) == 1 && dl == DIGEST;
}

void pcd_auth_free(pcd_auth *a)
{
    if (!a)
        return;
    OPENSSL_cleanse(a->v, a->n * sizeof *a->v);
    free(a->v);
    free(a);
}

size_t pcd_auth_count(const pcd_auth *a)
{
    return a ? a->n : 0;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    return n >= 1 && n <= PCD_TOKEN_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-@") == n;
}

/* One non-comment line, split in place: 0, or -1 with err (no token in it). */
static int parse_line(char *line, const char *path, unsigned lineno, struct entry *e, char *err,
                      size_t errlen)
{
    char *save = NULL;
    char *name = strtok_r(line, " \t", &save);
    char *rights = strtok_r(NULL, " \t", &save);
    char *token = strtok_r(NULL, " \t", &save);
    char *extra = strtok_r(NULL, " \t", &save);
    if (!name || !rights || !token || extra) {
        snprintf(err, errlen, "%s:%u: expected NAME RIGHTS TOKEN separated by spaces", path, lineno);
        return -1;
    }
    if (!name_ok(name)) {
        snprintf(err, errlen, "%s:%u: the name must be 1 to %d letters, digits, _ . - or @", path,
                 lineno, PCD_TOKEN_NAME_MAX);
        return -1;
    }
    int r = pcp_right_find(rights);
    if (r <= PCP_R_NONE) {
        /* A word as long as a token may be one, in the wrong column: never quoted. */
        if (strlen(rights) >= PCD_TOKEN_MIN)
            snprintf(err, errlen, "%s:%u: rights must be read, learn or admin, not a word of %zu "
                     "bytes (is the token in the RIGHTS column?)", path, lineno, strlen(rights));
        else
            snprintf(err, errlen, "%s:%u: rights must be read, learn or admin, not '%s'", path,
                     lineno, rights);
        return -1;
    }
    size_t tl = strlen(token);
    if (tl < PCD_TOKEN_MIN || tl > PCD_TOKEN_MAX) {
        snprintf(err, errlen, "%s:%u: the token of %s is %zu bytes; tokens are %d to %d bytes "
                 "(e.g. openssl rand -hex 32)", path, lineno, name, tl, PCD_TOKEN_MIN,
                 PCD_TOKEN_MAX);
        return -1;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    e->rights = (unsigned)r;
    bool ok = sha256(token, tl, e->digest);
    OPENSSL_cleanse(token, tl);
    if (!ok) {
        snprintf(err, errlen, "%s:%u: SHA-256 is not available from OpenSSL", path, lineno);
        return -1;
    }
    return 0;
}

static int load_file(const char *path, pcd_auth *a, char *err, size_t errlen)
{
    FILE *f = pcd_secret_open(path, "the tokens", err, errlen);
    if (!f)
        return -1;
    char line[PCD_TOKEN_MAX + 2 * PCD_TOKEN_NAME_MAX];
    unsigned lineno = 0;
    int rc = 0;
    size_t cap = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            snprintf(err, errlen, "%s:%u: the line is too long", path, lineno);
            rc = -1;
            break;
        }
        line[strcspn(line, "\r\n")] = 0;
        char *p = line + strspn(line, " \t");
        if (!*p || *p == '#')
            continue;
        if (!PC_GROW(a->v, cap, a->n, 8)) {
            snprintf(err, errlen, "out of memory reading %s", path);
            rc = -1;
            break;
        }
        struct entry *e = &a->v[a->n];
        if ((rc = parse_line(p, path, lineno, e, err, errlen)) != 0)
            break;
        for (size_t i = 0; i < a->n && rc == 0; i++) {
            if (!strcmp(a->v[i].name, e->name)) {
                snprintf(err, errlen, "%s:%u: the name %s is used twice", path, lineno, e->name);
                rc = -1;
            } else if (!CRYPTO_memcmp(a->v[i].digest, e->digest, DIGEST)) {
                snprintf(err, errlen, "%s:%u: %s has the same token as %s", path, lineno, e->name,
                         a->v[i].name);
                rc = -1;
            }
        }
        a->n += rc == 0;
    }
    OPENSSL_cleanse(line, sizeof line);
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read the tokens %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && a->n == 0) {
        snprintf(err, errlen, "%s has no tokens (lines NAME RIGHTS TOKEN)", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

int pcd_auth_load(const pcd_config *cfg, pcd_auth **out, char *err, size_t errlen)
{
    *out = NULL;
    char file[4200];
    if (pcd_secret_path("auth.tokens_file", cfg->tokens_file, "auth.tokens_credential",
                        cfg->tokens_credential, "/etc/perceptrond/tokens", file, sizeof file, err,
                        errlen) != 0)
        return -1;
    if (!*file)
        return 0;
    pcd_auth *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (load_file(file, a, err, errlen) != 0) {
        pcd_auth_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

bool pcd_auth_check(const pcd_auth *a, const void *token, size_t len, const char **name,
                    unsigned *rights)
{
    unsigned char d[DIGEST];
    if (!a || !sha256(token, len, d))
        return false;
    size_t hit = SIZE_MAX;
    for (size_t i = 0; i < a->n; i++) {
        /* no early exit, no branch on the bytes: a match only picks the index */
        size_t eq = (size_t)(CRYPTO_memcmp(a->v[i].digest, d, DIGEST) == 0);
        hit = eq ? i : hit;
    }
    OPENSSL_cleanse(d, sizeof d);
    if (hit == SIZE_MAX)
        return false;
    *name = a->v[hit].name;
    *rights = a->v[hit].rights;
    return true;
}
