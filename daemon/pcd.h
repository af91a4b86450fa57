/* pcd.h - the daemon's entry point, called by main.c. */
#ifndef PCD_H
#define PCD_H

#include "daemon/config/config.h"

/* Runs the daemon on cfg (taken over and freed) until SIGTERM/SIGINT.
 * config_path is kept for SIGHUP (NULL: the built-in default).  Returns the
 * process exit status. */
int pcd_run(pcd_config *cfg, const char *config_path);

#endif
