/*
 * berth-shim's service modes: one-shot jobs the daemon runs the monitor binary for, chosen by the first argument
 * before the monitor's own options are parsed (service-modes.c).
 */
#ifndef BERTH_SERVICE_MODES_H
#define BERTH_SERVICE_MODES_H

/* The exit status of a service mode, or -1 when argv names none (the monitor runs as usual). */
int service_mode(int argc, char **argv);

#endif
