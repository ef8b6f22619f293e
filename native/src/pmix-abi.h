// The part of PMIx's C ABI (libpmix.so.2: PMIx v3, v4 and v5 keep it) that
// railcomm's PMIx client uses, declared here so that building railcomm needs
// no libpmix-dev: the library is opened at run time (pmix.cc). Layouts and
// values are those of pmix_common.h; test/unit/pmix.test.mjs compiles this
// file against the real headers, where installed, and checks every one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace railcomm {
namespace pmix {

using status_t = int;                 // pmix_status_t
using rank_t = uint32_t;              // pmix_rank_t
using data_type_t = uint16_t;         // pmix_data_type_t
using scope_t = uint8_t;              // pmix_scope_t
using info_directives_t = uint32_t;   // pmix_info_directives_t

constexpr size_t kMaxNsLen = 255;     // PMIX_MAX_NSLEN
constexpr size_t kMaxKeyLen = 511;    // PMIX_MAX_KEYLEN

struct Proc {                         // pmix_proc_t
  char nspace[kMaxNsLen + 1];
  rank_t rank;
};

struct ByteObject {                   // pmix_byte_object_t
  char* bytes;
  size_t size;
};

struct Envar {                        // pmix_envar_t: the union's largest member (sets its size)
  char* envar;
  char* value;
  char separator;
};

struct Value {                        // pmix_value_t, with the members railcomm reads or writes
  data_type_t type;
  union {
    bool flag;
    char* string;
    int integer;
    unsigned int uint;
    uint16_t uint16;
    uint32_t uint32;
    rank_t rank;
    ByteObject bo;
    Envar envar;
    void* ptr;
  } data;
};

struct Info {                         // pmix_info_t
  char key[kMaxKeyLen + 1];
  info_directives_t flags;
  Value value;
};

// Status codes
constexpr status_t kSuccess = 0;
constexpr status_t kErrTypeMismatch = -18;
constexpr status_t kErrTimeout = -24;
constexpr status_t kErrUnreach = -25;
constexpr status_t kErrBadParam = -27;
constexpr status_t kErrInit = -31;
constexpr status_t kErrNotFound = -46;
constexpr status_t kErrLostConnection = -61;
constexpr status_t kEventActionComplete = -334;

// Data types
constexpr data_type_t kBool = 1;
constexpr data_type_t kString = 3;
constexpr data_type_t kInt = 6;
constexpr data_type_t kUint = 11;
constexpr data_type_t kUint16 = 13;
constexpr data_type_t kUint32 = 14;
constexpr data_type_t kByteObject = 27;
constexpr data_type_t kProcRank = 40;

constexpr scope_t kGlobal = 3;                       // PMIX_GLOBAL
constexpr rank_t kRankWildcard = UINT32_MAX - 1;     // PMIX_RANK_WILDCARD

// Keys (attribute names)
constexpr const char* kJobSize = "pmix.job.size";      // PMIX_JOB_SIZE
constexpr const char* kLocalRank = "pmix.lrank";       // PMIX_LOCAL_RANK
constexpr const char* kLocalSize = "pmix.local.size";  // PMIX_LOCAL_SIZE
constexpr const char* kCollectData = "pmix.collect";   // PMIX_COLLECT_DATA
constexpr const char* kTimeout = "pmix.timeout";       // PMIX_TIMEOUT

// Callbacks
using EventNotificationCb = void (*)(status_t status, Info* results, size_t nresults, void (*cbfunc)(status_t, void*), void* thiscbdata, void* notification_cbdata);
using NotificationFn = void (*)(size_t evhdlr_registration_id, status_t status, const Proc* source, Info info[], size_t ninfo,
                                Info* results, size_t nresults, EventNotificationCb cbfunc, void* cbdata);
using HdlrRegCb = void (*)(status_t status, size_t refid, void* cbdata);

// Functions (looked up with dlsym)
using InitFn = status_t (*)(Proc* proc, Info info[], size_t ninfo);
using FinalizeFn = status_t (*)(const Info info[], size_t ninfo);
using PutFn = status_t (*)(scope_t scope, const char key[], Value* val);
using CommitFn = status_t (*)();
using FenceFn = status_t (*)(const Proc procs[], size_t nprocs, const Info info[], size_t ninfo);
using GetFn = status_t (*)(const Proc* proc, const char key[], const Info info[], size_t ninfo, Value** val);
using ErrorStringFn = const char* (*)(status_t status);
using GetVersionFn = const char* (*)();
// Returns pmix_status_t from PMIx v4 on (void before): read the result only there.
using RegisterEventHandlerFn = status_t (*)(status_t codes[], size_t ncodes, Info info[], size_t ninfo, NotificationFn evhdlr, HdlrRegCb cbfunc, void* cbdata);
using ValueDestructFn = void (*)(Value* val);   // PMIx v4 on; earlier, railcomm frees what it reads itself

}  // namespace pmix
}  // namespace railcomm
