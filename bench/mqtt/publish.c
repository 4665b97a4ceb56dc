/* The MQTT benchmark's baseline: publishes the lines of a file (one payload per line) to one topic at QoS 1 with
 * libmosquitto, as fast as the broker acknowledges them, with the same number of messages in flight as vlogger's
 * output, and prints the messages per second from the first publish to the last PUBACK.
 * Usage: publish HOST PORT TOPIC FILE INFLIGHT
 * Build: gcc -O2 -o publish bench/mqtt/publish.c -lmosquitto */
#include <mosquitto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long acked = 0;
static int connected = 0;

static void on_connect(struct mosquitto *m, void *obj, int rc) {
    (void)m; (void)obj;
    pthread_mutex_lock(&lock);
    connected = rc == 0 ? 1 : -1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void on_publish(struct mosquitto *m, void *obj, int mid) {
    (void)m; (void)obj; (void)mid;
    pthread_mutex_lock(&lock);
    acked++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: publish HOST PORT TOPIC FILE INFLIGHT\n"); return 2; }
    FILE *f = fopen(argv[4], "r");
    if (!f) { perror(argv[4]); return 1; }
    /* The payloads in memory first, as vlogger has its rows in the store: only publishing is timed. */
    size_t cap = 1 << 20, n = 0;
    char **lines = malloc(cap * sizeof *lines);
    size_t *lengths = malloc(cap * sizeof *lengths);
    char *line = NULL; size_t size = 0; ssize_t len;
    while ((len = getline(&line, &size, f)) > 0) {
        if (line[len - 1] == '\n') len--;
        if (n == cap) { cap *= 2; lines = realloc(lines, cap * sizeof *lines); lengths = realloc(lengths, cap * sizeof *lengths); }
        lines[n] = malloc(len); memcpy(lines[n], line, len); lengths[n] = len; n++;
    }
    fclose(f);
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new("vlogger-bench-c", true, NULL);
    mosquitto_int_option(m, MOSQ_OPT_SEND_MAXIMUM, atoi(argv[5]));
    mosquitto_connect_callback_set(m, on_connect);
    mosquitto_publish_callback_set(m, on_publish);
    if (mosquitto_connect(m, argv[1], atoi(argv[2]), 30) != MOSQ_ERR_SUCCESS) { fprintf(stderr, "connect failed\n"); return 1; }
    mosquitto_loop_start(m);
    pthread_mutex_lock(&lock);
    while (connected == 0) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    if (connected < 0) { fprintf(stderr, "refused\n"); return 1; }
    double start = now();
    for (size_t i = 0; i < n; i++) {
        if (mosquitto_publish(m, NULL, argv[3], (int)lengths[i], lines[i], 1, false) != MOSQ_ERR_SUCCESS) {
            fprintf(stderr, "publish failed at %zu\n", i); return 1;
        }
    }
    pthread_mutex_lock(&lock);
    while (acked < (long)n) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    double seconds = now() - start;
    printf("%.0f %zu %.3f\n", n / seconds, n, seconds);
    mosquitto_disconnect(m);
    mosquitto_loop_stop(m, false);
    mosquitto_destroy(m);
    return 0;
}
