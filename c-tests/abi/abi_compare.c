/*
 * Checks the ABI facts printed by abi_print built against our headers
 * ("ours") against two references:
 *   - UCX master's numbers (master_layout.txt, plus the failover additions):
 *     what we implement, so every fact master has must match exactly;
 *   - abi_print built against Debian's UCX 1.13 headers: what binaries built
 *     on Debian expect. Facts master lacks must match 1.13; where 1.13 and
 *     master disagree, the difference is listed (master wins).
 * Every fact of ours must have at least one reference.
 *
 * usage: abi_compare OURS_PRINTER UCX113_PRINTER|- MASTER_TABLE
 * Exit status 0 when everything matches, 1 on any mismatch, 2 on usage or
 * I/O errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One line of a table: "size T N", "field T M OFF N" or "const NAME V". */
typedef struct {
    char key[256];     /* kind, type and member: what the fact is about */
    char value[160];   /* the numbers, as printed */
} fact_t;

typedef struct {
    fact_t *facts;
    size_t count;
    size_t capacity;
} table_t;

static int table_add(table_t *table, const char *line)
{
    char kind[16], a[128], b[128], c[32], d[32];
    int n = sscanf(line, "%15s %127s %127s %31s %31s", kind, a, b, c, d);
    fact_t *fact;

    if ((n <= 0) || (kind[0] == '#')) {
        return 0;
    }
    if (table->count == table->capacity) {
        size_t capacity = table->capacity ? 2 * table->capacity : 1024;
        fact_t *grown = realloc(table->facts, capacity * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        table->facts    = grown;
        table->capacity = capacity;
    }
    fact = &table->facts[table->count];
    if ((strcmp(kind, "size") == 0) && (n == 3)) {
        snprintf(fact->key, sizeof(fact->key), "sizeof(%s)", a);
        snprintf(fact->value, sizeof(fact->value), "%s", b);
    } else if ((strcmp(kind, "field") == 0) && (n == 5)) {
        snprintf(fact->key, sizeof(fact->key), "%s.%s", a, b);
        snprintf(fact->value, sizeof(fact->value), "offset %s size %s", c, d);
    } else if ((strcmp(kind, "const") == 0) && (n == 3)) {
        snprintf(fact->key, sizeof(fact->key), "%s", a);
        snprintf(fact->value, sizeof(fact->value), "%s", b);
    } else {
        fprintf(stderr, "abi_compare: malformed line: %s", line);
        return -1;
    }
    ++table->count;
    return 0;
}

static int table_read(table_t *table, FILE *stream)
{
    char line[512];

    while (fgets(line, sizeof(line), stream) != NULL) {
        if (table_add(table, line) != 0) {
            return -1;
        }
    }
    return 0;
}

static int table_from_command(table_t *table, const char *command)
{
    FILE *stream = popen(command, "r");
    int status;

    if (stream == NULL) {
        fprintf(stderr, "abi_compare: cannot run %s\n", command);
        return -1;
    }
    if (table_read(table, stream) != 0) {
        pclose(stream);
        return -1;
    }
    status = pclose(stream);
    if (status != 0) {
        fprintf(stderr, "abi_compare: %s exited with status %d\n", command, status);
        return -1;
    }
    return 0;
}

static int table_from_file(table_t *table, const char *path)
{
    FILE *stream = fopen(path, "r");
    int result;

    if (stream == NULL) {
        fprintf(stderr, "abi_compare: cannot open %s\n", path);
        return -1;
    }
    result = table_read(table, stream);
    fclose(stream);
    return result;
}

static const fact_t *table_find(const table_t *table, const char *key)
{
    size_t i;

    for (i = 0; i < table->count; ++i) {
        if (strcmp(table->facts[i].key, key) == 0) {
            return &table->facts[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    table_t ours = {NULL, 0, 0}, ucx113 = {NULL, 0, 0}, master = {NULL, 0, 0};
    size_t i, failures = 0, checked_master = 0, checked_113 = 0, same_as_113 = 0;
    int have_113;

    if (argc != 4) {
        fprintf(stderr, "usage: %s OURS_PRINTER UCX113_PRINTER|- MASTER_TABLE\n", argv[0]);
        return 2;
    }
    have_113 = strcmp(argv[2], "-") != 0;
    if ((table_from_command(&ours, argv[1]) != 0) ||
        (have_113 && (table_from_command(&ucx113, argv[2]) != 0)) ||
        (table_from_file(&master, argv[3]) != 0)) {
        return 2;
    }

    for (i = 0; i < ours.count; ++i) {
        const fact_t *fact     = &ours.facts[i];
        const fact_t *expected = table_find(&master, fact->key);
        const fact_t *old      = have_113 ? table_find(&ucx113, fact->key) : NULL;

        if (expected != NULL) {
            ++checked_master;
            if (strcmp(expected->value, fact->value) != 0) {
                printf("MISMATCH %s: UCX master has %s, ours %s\n", fact->key,
                       expected->value, fact->value);
                ++failures;
            }
            if ((old != NULL) && (strcmp(old->value, expected->value) != 0)) {
                printf("note: %s differs between UCX 1.13 (%s) and master (%s); "
                       "ours follows master\n", fact->key, old->value,
                       expected->value);
            }
        } else if (old != NULL) {
            ++checked_113;
            if (strcmp(old->value, fact->value) != 0) {
                printf("MISMATCH %s: UCX 1.13 headers have %s, ours %s\n", fact->key,
                       old->value, fact->value);
                ++failures;
            }
        } else {
            printf("MISMATCH %s: no reference value (ours %s)\n", fact->key,
                   fact->value);
            ++failures;
        }
        if ((old != NULL) && (strcmp(old->value, fact->value) == 0)) {
            ++same_as_113;
        }
    }
    for (i = 0; i < master.count; ++i) {
        if (table_find(&ours, master.facts[i].key) == NULL) {
            printf("MISSING %s: UCX master has %s, ours does not print it\n",
                   master.facts[i].key, master.facts[i].value);
            ++failures;
        }
    }

    printf("%zu facts: %zu checked against UCX master, %zu against UCX 1.13 only; "
           "%zu identical to UCX 1.13%s; %zu failures\n", ours.count, checked_master,
           checked_113, same_as_113, have_113 ? "" : " (1.13 headers not used)",
           failures);
    free(ours.facts);
    free(ucx113.facts);
    free(master.facts);
    return (failures == 0) ? 0 : 1;
}
