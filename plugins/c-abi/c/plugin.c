/*
 * A toolgate plugin written in C against include/toolgate_plugin.h, with no Rust in it: the
 * proof that the ABI is plain C. Tools:
 *   c.echo      {...}  returns its arguments JSON, unchanged, as one text part
 *   c.fail      {}     fails with "deliberate failure from C"
 *   c.progress  {}     reports "half way" through the host's callback, returns "done"
 *   c.cancelled {}     returns "cancelled: yes" or "cancelled: no" from the host's flag
 *   c.config    {}     returns the configuration JSON init received
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "toolgate_plugin.h"

static const char MANIFEST[] =
    "{\"name\": \"c-abi\", \"version\": \"1.0.0\", \"tools\": ["
    "{\"name\": \"c.echo\", \"description\": \"Return the arguments.\", "
    "\"parameters\": {\"type\": \"object\"}},"
    "{\"name\": \"c.fail\", \"description\": \"Fail.\"},"
    "{\"name\": \"c.progress\", \"description\": \"Report progress.\"},"
    "{\"name\": \"c.cancelled\", \"description\": \"Say whether the call is cancelled.\"},"
    "{\"name\": \"c.config\", \"description\": \"Return the configuration.\"}]}";

/* An instance: a copy of the configuration JSON. */
typedef struct Instance {
    char *config;
    size_t config_len;
} Instance;

/* Writes bytes into a fresh buffer (malloc'd here, freed by free_buf here). */
static void put(ToolgateOwnedBuf *out, const char *bytes, size_t len) {
    if (out == NULL) {
        return;
    }
    out->ptr = NULL;
    out->len = 0;
    if (len == 0) {
        return;
    }
    out->ptr = malloc(len);
    if (out->ptr == NULL) {
        return;
    }
    memcpy(out->ptr, bytes, len);
    out->len = len;
}

/* Writes [{"type":"text","text":"<text escaped>"}]. */
static void put_text_part(ToolgateOwnedBuf *out, const uint8_t *text, size_t len) {
    static const char head[] = "[{\"type\":\"text\",\"text\":\"";
    static const char tail[] = "\"}]";
    /* Worst case every byte becomes \u00XX (6 bytes). */
    char *json = malloc(sizeof head + len * 6 + sizeof tail);
    if (json == NULL) {
        put(out, "", 0);
        return;
    }
    size_t n = 0;
    memcpy(json, head, sizeof head - 1);
    n += sizeof head - 1;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = text[i];
        if (c == '"' || c == '\\') {
            json[n++] = '\\';
            json[n++] = (char)c;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            json[n++] = '\\';
            json[n++] = 'u';
            json[n++] = '0';
            json[n++] = '0';
            json[n++] = hex[c >> 4];
            json[n++] = hex[c & 0xf];
        } else {
            json[n++] = (char)c;
        }
    }
    memcpy(json + n, tail, sizeof tail - 1);
    n += sizeof tail - 1;
    put(out, json, n);
    free(json);
}

static int is(ToolgateStrRef s, const char *name) {
    size_t len = strlen(name);
    return s.len == len && memcmp(s.ptr, name, len) == 0;
}

static uint32_t c_manifest(ToolgateOwnedBuf *out) {
    put(out, MANIFEST, sizeof MANIFEST - 1);
    return TOOLGATE_STATUS_OK;
}

static uint32_t c_init(ToolgateStrRef config, void **instance, ToolgateOwnedBuf *error) {
    Instance *inst = malloc(sizeof *inst);
    if (inst == NULL || instance == NULL) {
        free(inst);
        static const char oom[] = "out of memory";
        put(error, oom, sizeof oom - 1);
        return TOOLGATE_STATUS_ERROR;
    }
    inst->config = malloc(config.len + 1);
    if (inst->config == NULL) {
        free(inst);
        static const char oom[] = "out of memory";
        put(error, oom, sizeof oom - 1);
        return TOOLGATE_STATUS_ERROR;
    }
    if (config.len > 0) {
        memcpy(inst->config, config.ptr, config.len);
    }
    inst->config_len = config.len;
    *instance = inst;
    return TOOLGATE_STATUS_OK;
}

static uint32_t c_call(const void *instance, ToolgateStrRef tool, ToolgateStrRef arguments,
                       const ToolgateCallContext *context, ToolgateOwnedBuf *out) {
    const Instance *inst = instance;
    if (is(tool, "c.echo")) {
        put_text_part(out, arguments.ptr, arguments.len);
        return TOOLGATE_STATUS_OK;
    }
    if (is(tool, "c.fail")) {
        static const char message[] = "deliberate failure from C";
        put(out, message, sizeof message - 1);
        return TOOLGATE_STATUS_ERROR;
    }
    if (is(tool, "c.progress")) {
        if (context != NULL && context->progress != NULL) {
            static const char message[] = "half way";
            ToolgateStrRef ref = {(const uint8_t *)message, sizeof message - 1};
            context->progress(context->progress_context, ref);
        }
        put_text_part(out, (const uint8_t *)"done", 4);
        return TOOLGATE_STATUS_OK;
    }
    if (is(tool, "c.cancelled")) {
        int cancelled = 0;
        if (context != NULL && context->cancel_flag != NULL) {
            cancelled = atomic_load((const volatile _Atomic uint8_t *)context->cancel_flag) != 0;
        }
        const char *answer = cancelled ? "cancelled: yes" : "cancelled: no";
        put_text_part(out, (const uint8_t *)answer, strlen(answer));
        return TOOLGATE_STATUS_OK;
    }
    if (is(tool, "c.config")) {
        put_text_part(out, (const uint8_t *)inst->config, inst->config_len);
        return TOOLGATE_STATUS_OK;
    }
    static const char unknown[] = "no such tool in the C plugin";
    put(out, unknown, sizeof unknown - 1);
    return TOOLGATE_STATUS_ERROR;
}

static void c_destroy(void *instance) {
    Instance *inst = instance;
    if (inst != NULL) {
        free(inst->config);
        free(inst);
    }
}

static void c_free_buf(ToolgateOwnedBuf buf) {
    free(buf.ptr);
}

static const ToolgatePluginVTable VTABLE = {
    {TOOLGATE_ABI_VERSION, (uint32_t)sizeof(ToolgatePluginVTable)},
    c_manifest,
    c_init,
    c_call,
    c_destroy,
    c_free_buf,
    NULL, /* no call_streaming: the host calls c_call */
};

const ToolgateVTableHeader *toolgate_plugin_entry(void) {
    return &VTABLE.header;
}
