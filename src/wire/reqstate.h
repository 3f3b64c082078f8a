/* The requestState token of 2026-07-28 input requests (MRTR): "<payload>.<mac>", both base64url,
 * the payload compact JSON and the mac HMAC-SHA-256 over the payload's base64 text with the
 * server's key. The payload names the durable record of the exchange ("r", a 32-hex id, which
 * also routes the retry to the record's worker), the round ("n"), the expiry ("e", wall ms), and
 * what the retry must match: method ("m"), target name ("t"), a digest of the arguments ("d")
 * and the authenticated principal ("p"). Pure functions, any thread. */
#ifndef MCPD_WIRE_REQSTATE_H
#define MCPD_WIRE_REQSTATE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

/* Longest token accepted (bytes). */
#define REQSTATE_MAX 4096
#define REQSTATE_KEY_LEN 32

/* The process's key (REQSTATE_KEY_LEN bytes), written once at start by the main thread
 * (modern_state_key_init) before the workers run; read by any thread after. */
unsigned char *reqstate_process_key(void);
/* A new token for payload (borrowed); malloc'd. NULL when payload has no JSON text: NULL
 * itself, a value json_dumps refuses (a string that is not UTF-8), or json_dumps's allocation
 * failed. The caller answers an error then and hands out no token. */
char *reqstate_mint(const unsigned char key[REQSTATE_KEY_LEN], const json_t *payload);
/* Verifies token: 0 with *payload (new reference); -EBADMSG when malformed or its mac does not
 * verify (tampered, or minted with another key); -ETIME when it verifies but has expired. */
int reqstate_open(const unsigned char key[REQSTATE_KEY_LEN], const char *token, int64_t now_ms,
                  json_t **payload);
/* The record id the token names, unverified (routing only): 0, or -1 when it names none. */
int reqstate_peek_record(const char *token, char rid[SESSION_ID_LEN + 1]);
/* A digest of a request's arguments (canonical JSON: sorted keys, compact, a whole real in the
 * 64-bit range written as the integer it equals), 32 hex + NUL. */
void reqstate_digest(const json_t *args, char out[33]);

#endif
