/*
 * Prepared ECDSA nonces for the verdict signer (docs/attestations.md, "Where the signature is
 * made"; src/attest/prepared.ts holds the rules and the JavaScript path this replaces).
 *
 * Built from the libsecp256k1 source that the `secp256k1` package ships (the same library the
 * service signs with), as one compilation unit, so that it can use the library's own constant-time
 * parts below its public API:
 *   - k·G by secp256k1_ecmult_gen, the blinded comb the library signs with, on a context of the
 *     thread's own that randomize() blinds with bytes of the operating system's CSPRNG;
 *   - the points' Z coordinates inverted together (one constant-time field inversion per batch and
 *     three multiplications per point) instead of one inversion per point;
 *   - the nonces' inverses the same way, with the constant-time scalar inversion.
 * No branch or memory index depends on a nonce. Every secret the functions hold is cleared before
 * they return.
 *
 * An entry is ENTRY_BYTES bytes: r (32, big-endian) ‖ a = k⁻¹ (32) ‖ b = k⁻¹·r·d (32) ‖ the
 * parity of k·G's y (1). prepare() writes entries; finish() turns one into a signature and zeroes
 * it.
 */
#define ECMULT_GEN_PREC_BITS 4
#define ECMULT_WINDOW_SIZE 15
#define USE_NUM_NONE 1
#define USE_FIELD_INV_BUILTIN 1
#define USE_SCALAR_INV_BUILTIN 1
#if defined(__x86_64__) && !defined(_WIN32)
#define HAVE___INT128 1
#define USE_ASM_X86_64 1
#define USE_FIELD_5X52 1
#define USE_SCALAR_4X64 1
#else
#define USE_FIELD_10X26 1
#define USE_SCALAR_8X32 1
#endif

#include "secp256k1.c"

#include <node_api.h>
#include <string.h>

#define ENTRY_BYTES 97
/* Points made and converted together; the arrays live on the stack. */
#define GROUP 128

/* memset that the compiler may not drop as a dead store. */
static void wipe(void *p, size_t n) {
  volatile unsigned char *v = (volatile unsigned char *)p;
  while (n--) *v++ = 0;
}

typedef struct {
  secp256k1_context *ctx;
  /* Set by randomize(): prepare() refuses to run on an unblinded context. */
  int randomized;
} Instance;

static void instance_free(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  Instance *inst = (Instance *)data;
  if (inst->ctx != NULL) secp256k1_context_destroy(inst->ctx);
  free(inst);
}

static napi_value fail(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* The bytes of a Uint8Array argument (or a Buffer), or NULL. */
static unsigned char *bytes_of(napi_env env, napi_value v, size_t *len) {
  bool is;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return NULL;
  napi_typedarray_type type;
  void *data;
  napi_value ab;
  size_t offset;
  if (napi_get_typedarray_info(env, v, &type, len, &data, &ab, &offset) != napi_ok) return NULL;
  if (type != napi_uint8_array) return NULL;
  return (unsigned char *)data;
}

/* The call's first `n` arguments into argv; false (an error thrown, naming `usage`) if fewer came. */
static bool args_of(napi_env env, napi_callback_info info, napi_value *argv, size_t n, const char *usage) {
  size_t argc = n;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= n) return true;
  napi_throw_type_error(env, NULL, usage);
  return false;
}

/* This thread's instance data, or NULL (an error thrown). */
static Instance *instance_of(napi_env env) {
  Instance *inst = NULL;
  if (napi_get_instance_data(env, (void **)&inst) == napi_ok && inst != NULL) return inst;
  napi_throw_error(env, NULL, "no context");
  return NULL;
}

/*
 * k·G, kept out of line so that a profile or a callgrind count sees one call per nonce
 * (bench/instructions.ts counts the signing thread's instructions per nonce by it).
 */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void nonce_point(const secp256k1_context *ctx, secp256k1_gej *r, const secp256k1_scalar *k) {
  secp256k1_ecmult_gen(&ctx->ecmult_gen_ctx, r, k);
}

/*
 * One group: candidates[i] for i < n are in-range nonces. Writes the usable ones to out and
 * returns how many.
 */
static size_t group(const secp256k1_context *ctx, const secp256k1_scalar *d, secp256k1_scalar *k, size_t n,
                    unsigned char *out) {
  /* Every secret this group holds, in one place so that one wipe clears them all. */
  struct {
    secp256k1_gej p[GROUP];
    secp256k1_fe zacc[GROUP];
    secp256k1_fe inv, zinv, z2, z3, t;
    secp256k1_scalar kacc[GROUP];
    secp256k1_scalar kinv, sinv, r, b;
    unsigned char x32[32];
  } w;
  size_t i, m = 0;
  int overflow;

  for (i = 0; i < n; i++) nonce_point(ctx, &w.p[i], &k[i]);

  /* Montgomery's trick: zacc[i] = z0·…·z(i-1), then one inversion of the whole product. */
  secp256k1_fe_set_int(&w.zacc[0], 1);
  for (i = 1; i < n; i++) secp256k1_fe_mul(&w.zacc[i], &w.zacc[i - 1], &w.p[i - 1].z);
  secp256k1_fe_mul(&w.t, &w.zacc[n - 1], &w.p[n - 1].z);
  secp256k1_fe_inv(&w.inv, &w.t);
  /* The same for the nonces. */
  secp256k1_scalar_set_int(&w.kacc[0], 1);
  for (i = 1; i < n; i++) secp256k1_scalar_mul(&w.kacc[i], &w.kacc[i - 1], &k[i - 1]);
  secp256k1_scalar_mul(&w.sinv, &w.kacc[n - 1], &k[n - 1]);
  secp256k1_scalar_inverse(&w.sinv, &w.sinv);

  for (i = n; i-- > 0;) {
    /* zinv = 1/z_i; inv becomes 1/(z0·…·z(i-1)). */
    secp256k1_fe_mul(&w.zinv, &w.inv, &w.zacc[i]);
    w.t = w.inv;
    secp256k1_fe_mul(&w.inv, &w.t, &w.p[i].z);
    secp256k1_fe_sqr(&w.z2, &w.zinv);
    secp256k1_fe_mul(&w.z3, &w.z2, &w.zinv);
    secp256k1_fe_mul(&w.t, &w.p[i].x, &w.z2);
    w.p[i].x = w.t;
    secp256k1_fe_mul(&w.t, &w.p[i].y, &w.z3);
    w.p[i].y = w.t;
    secp256k1_fe_normalize(&w.p[i].x);
    secp256k1_fe_normalize(&w.p[i].y);
    /* kinv = 1/k_i; sinv becomes 1/(k0·…·k(i-1)). */
    secp256k1_scalar_mul(&w.kinv, &w.sinv, &w.kacc[i]);
    secp256k1_scalar_mul(&w.sinv, &w.sinv, &k[i]);

    secp256k1_fe_get_b32(w.x32, &w.p[i].x);
    secp256k1_scalar_set_b32(&w.r, w.x32, &overflow);
    /* x ≥ n (probability about 2⁻¹²⁸): the entry is dropped, so every signature recovers with v 27 or 28. */
    if (overflow || secp256k1_scalar_is_zero(&w.r)) continue;
    secp256k1_scalar_mul(&w.b, &w.kinv, &w.r);
    secp256k1_scalar_mul(&w.b, &w.b, d);
    unsigned char *e = out + ENTRY_BYTES * m++;
    memcpy(e, w.x32, 32);
    secp256k1_scalar_get_b32(e + 32, &w.kinv);
    secp256k1_scalar_get_b32(e + 64, &w.b);
    e[96] = (unsigned char)secp256k1_fe_is_odd(&w.p[i].y);
  }
  wipe(&w, sizeof(w));
  return m;
}

/*
 * prepare(key, candidates, out): key is the 32-byte private key, candidates 32-byte nonces from the
 * CSPRNG (those not in 1..n-1 are skipped), out room for one entry per candidate. Entries are
 * written in the candidates' order, less the skipped ones; returns their number.
 */
static napi_value Prepare(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!args_of(env, info, argv, 3, "prepare(key, candidates, out)")) return NULL;
  Instance *inst = instance_of(env);
  if (inst == NULL) return NULL;
  if (!inst->randomized) return fail(env, "randomize(seed) first");
  size_t keyLen, candLen, outLen;
  unsigned char *key = bytes_of(env, argv[0], &keyLen);
  unsigned char *cand = bytes_of(env, argv[1], &candLen);
  unsigned char *out = bytes_of(env, argv[2], &outLen);
  if (key == NULL || keyLen != 32) return fail(env, "the key must be 32 bytes");
  if (cand == NULL || candLen % 32 != 0) return fail(env, "the candidates must be a multiple of 32 bytes");
  if (out == NULL || outLen < (candLen / 32) * ENTRY_BYTES) return fail(env, "out must hold an entry per candidate");
  secp256k1_scalar d;
  int overflow;
  secp256k1_scalar_set_b32(&d, key, &overflow);
  if (overflow || secp256k1_scalar_is_zero(&d)) {
    wipe(&d, sizeof(d));
    return fail(env, "the key is not a valid secp256k1 private key");
  }
  secp256k1_scalar k[GROUP];
  size_t total = candLen / 32, at = 0, written = 0;
  while (at < total) {
    size_t n = 0;
    while (n < GROUP && at < total) {
      secp256k1_scalar_set_b32(&k[n], cand + 32 * at, &overflow);
      at++;
      if (!overflow && !secp256k1_scalar_is_zero(&k[n])) n++;
    }
    if (n > 0) written += group(inst->ctx, &d, k, n, out + ENTRY_BYTES * written);
  }
  wipe(k, sizeof(k));
  wipe(&d, sizeof(d));
  napi_value result;
  napi_create_uint32(env, (uint32_t)written, &result);
  return result;
}

static const char HEX[] = "0123456789abcdef";

/*
 * finish(entries, index, digest): the signature of the 32-byte digest from entry `index`, as 0x hex
 * r ‖ s ‖ v (v 27 or 28), s = a·z + b in the lower half of the order; null when s is 0 (probability
 * about 2⁻²⁵⁶). The entry is zeroed either way.
 */
static napi_value Finish(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  if (!args_of(env, info, argv, 3, "finish(entries, index, digest)")) return NULL;
  size_t entLen, digLen;
  uint32_t index;
  unsigned char *ent = bytes_of(env, argv[0], &entLen);
  unsigned char *dig = bytes_of(env, argv[2], &digLen);
  if (ent == NULL || napi_get_value_uint32(env, argv[1], &index) != napi_ok) return fail(env, "finish(entries, index, digest)");
  if (dig == NULL || digLen != 32) return fail(env, "the digest must be 32 bytes");
  if ((size_t)index >= entLen / ENTRY_BYTES) return fail(env, "no such entry");
  unsigned char *e = ent + (size_t)ENTRY_BYTES * index;
  /* The entry's secrets while they are used, wiped together. */
  struct {
    secp256k1_scalar a, b, s;
    unsigned char s32[32];
  } w;
  secp256k1_scalar z;
  int overflow;
  char text[2 + 128 + 2];
  secp256k1_scalar_set_b32(&w.a, e + 32, &overflow);
  secp256k1_scalar_set_b32(&w.b, e + 64, &overflow);
  secp256k1_scalar_set_b32(&z, dig, NULL); /* the digest reduced mod n, as ECDSA takes it */
  secp256k1_scalar_mul(&w.s, &w.a, &z);
  secp256k1_scalar_add(&w.s, &w.s, &w.b);
  int recid = e[96] & 1;
  napi_value result;
  if (secp256k1_scalar_is_zero(&w.s)) {
    napi_get_null(env, &result);
  } else {
    if (secp256k1_scalar_is_high(&w.s)) {
      secp256k1_scalar_negate(&w.s, &w.s);
      recid ^= 1;
    }
    secp256k1_scalar_get_b32(w.s32, &w.s);
    text[0] = '0';
    text[1] = 'x';
    for (int i = 0; i < 32; i++) {
      text[2 + 2 * i] = HEX[e[i] >> 4];
      text[3 + 2 * i] = HEX[e[i] & 15];
      text[66 + 2 * i] = HEX[w.s32[i] >> 4];
      text[67 + 2 * i] = HEX[w.s32[i] & 15];
    }
    text[130] = '1';
    text[131] = recid ? 'c' : 'b';
    napi_create_string_latin1(env, text, sizeof(text), &result);
  }
  wipe(e, ENTRY_BYTES);
  wipe(&w, sizeof(w));
  return result;
}

/* randomize(seed): blinds this thread's context with `seed`, 32 bytes from the CSPRNG. */
static napi_value Randomize(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  size_t len;
  if (!args_of(env, info, argv, 1, "randomize(seed)")) return NULL;
  Instance *inst = instance_of(env);
  if (inst == NULL) return NULL;
  unsigned char *seed = bytes_of(env, argv[0], &len);
  if (seed == NULL || len != 32) return fail(env, "the seed must be 32 bytes");
  /* Made here, not when the addon loads: a thread that only finishes signatures never builds the
     generator's tables. */
  if (inst->ctx == NULL) inst->ctx = secp256k1_context_create(SECP256K1_CONTEXT_SIGN);
  if (inst->ctx == NULL) return fail(env, "no context");
  if (!secp256k1_context_randomize(inst->ctx, seed)) return fail(env, "the context could not be randomized");
  inst->randomized = 1;
  return NULL;
}

/* Per thread that loads the addon (N-API instance data): its context, made and blinded by randomize(). */
static napi_value Init(napi_env env, napi_value exports) {
  Instance *inst = (Instance *)calloc(1, sizeof(Instance));
  if (inst == NULL) return fail(env, "out of memory");
  if (napi_set_instance_data(env, inst, instance_free, NULL) != napi_ok) {
    free(inst);
    return fail(env, "no instance data");
  }
  napi_property_descriptor props[] = {
      {"prepare", NULL, Prepare, NULL, NULL, NULL, napi_default, NULL},
      {"finish", NULL, Finish, NULL, NULL, NULL, napi_default, NULL},
      {"randomize", NULL, Randomize, NULL, NULL, NULL, napi_default, NULL},
      {"entryBytes", NULL, NULL, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_value entryBytes;
  napi_create_uint32(env, ENTRY_BYTES, &entryBytes);
  props[3].value = entryBytes;
  napi_define_properties(env, exports, 4, props);
  return exports;
}

NAPI_MODULE_INIT() { return Init(env, exports); }
