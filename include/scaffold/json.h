/* JSON with cJSON for every file the product writes or reads (src/util/json.c). */
#ifndef SF_JSON_H
#define SF_JSON_H

#include <cjson/cJSON.h>

char *sf_json_print(const cJSON *j); /* malloc'ed, 4-space indentation, final '\n' */
/* j printed as above into path, atomically (a temporary name, then rename); 0 or -1 with errno */
int sf_json_write_atomic(const char *path, const cJSON *j);
/* An object as rows, for files of long lists: one member per line and, for an array member, one
 * element per line, each row printed unformatted by cJSON; malloc'ed, final '\n' */
char *sf_json_print_rows(const cJSON *object);
int sf_json_write_rows_atomic(const char *path, const cJSON *object); /* as sf_json_write_atomic */
/* Parses a JSON file. On failure returns NULL and *err (malloc'ed) says why, with line:column. */
cJSON *sf_json_load(const char *path, char **err);
/* The number in j, or NaN when j is not a number */
double sf_json_num(const cJSON *j);
/* s as a JSON string literal, quotes included, escaped by cJSON; malloc'ed */
char *sf_json_quote(const char *s);

#endif
