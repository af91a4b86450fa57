/* secret.h - the files that hold secrets: the tokens (auth.tokens_file or
 * the systemd credential auth.tokens_credential) and the password given to
 * Redis (log.password_file or log.password_credential).  One place says
 * where such a file is and how it is opened, so both are held to the same
 * rules: a file other users may read is refused (it is a password file),
 * and it is read unbuffered, so no stdio buffer keeps a copy. */
#ifndef PCD_SECRET_H
#define PCD_SECRET_H

#include <stddef.h>
#include <stdio.h>

/* The path of a secret given as a file (key `file_key`, value `file`) or as
 * a systemd credential's name (`cred_key`, `cred`, found in
 * $CREDENTIALS_DIRECTORY; `example` is the LoadCredential= source path the
 * message suggests).  0 with path set ("" when neither is given), or -1
 * with err set: both given, a credential without $CREDENTIALS_DIRECTORY, or
 * a path where a name is wanted. */
int pcd_secret_path(const char *file_key, const char *file, const char *cred_key, const char *cred,
                    const char *example, char *path, size_t pathlen, char *err, size_t errlen);

/* Opens the secret file at path ("the tokens", "the Redis password": `what`
 * begins the messages), unbuffered.  NULL with err set when it cannot be
 * read or other users may read it. */
FILE *pcd_secret_open(const char *path, const char *what, char *err, size_t errlen);

#endif
