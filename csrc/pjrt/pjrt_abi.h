// Our own declaration of the part of the PJRT C API ABI that torch_tpu uses.
//
// PJRT plugins (shared objects exporting `GetPjrtApi`) speak a plain C ABI:
// a table of function pointers, each taking one "args" struct. We do not ship
// the upstream header; instead this file spells out the identifiers, field
// order and types we rely on, written against PJRT C API 0.81.
//
// Rules kept by this file:
//  * identifiers (types, fields, enumerators) are the ABI's own names, so code
//    reads the same as any PJRT client;
//  * every args struct has a `<Name>_STRUCT_SIZE` constant computed the way
//    the ABI defines it: offset of the last field plus its size (no trailing
//    padding). Plugins use it to learn which fields a caller knows about;
//  * `PJRT_Api` lists all 118 slots of 0.81 in ABI order; the ones we call are
//    typed, the rest are `void*` placeholders that only hold the layout.
//
// abi_check.cc compares all of this against the upstream header whenever the
// build can find one (TTPU_HAVE_OFFICIAL_PJRT_HEADER).
#pragma once

#include <cstddef>
#include <cstdint>

// Size of `type` as the ABI counts it: up to the end of `last_field`.
#define TTPU_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(static_cast<type*>(nullptr)->last_field))

// Defines `type##_STRUCT_SIZE` and checks that `last_field` really is last
// (i.e. the ABI size rounded up to the alignment is the full sizeof).
#define TTPU_DEFINE_STRUCT_SIZE(type, last_field)                                 \
  inline constexpr std::size_t type##_STRUCT_SIZE = TTPU_STRUCT_SIZE(type, last_field); \
  static_assert((type##_STRUCT_SIZE + alignof(type) - 1) / alignof(type) * alignof(type) == \
                    sizeof(type),                                                 \
                #type ": " #last_field " is not the last field")

namespace ttpu::abi {

using std::size_t;

// API version this file was written against.
inline constexpr int kTargetApiMajor = 0;
inline constexpr int kTargetApiMinor = 81;

// ===========================================================================
// Opaque handles. Owned by the plugin; we only pass pointers around.
// ===========================================================================
struct PJRT_Error;
struct PJRT_Event;
struct PJRT_Client;
struct PJRT_Device;
struct PJRT_DeviceDescription;
struct PJRT_Memory;
struct PJRT_TopologyDescription;
struct PJRT_Executable;
struct PJRT_LoadedExecutable;
struct PJRT_Buffer;
struct PJRT_SerializedExecutable;
struct PJRT_ExecuteContext;

// Structs we only ever point at (never build or read), left incomplete.
struct PJRT_Buffer_MemoryLayout;
struct PJRT_SendCallbackInfo;
struct PJRT_RecvCallbackInfo;
struct PJRT_KeyValueGetCallback_Args;
struct PJRT_KeyValuePutCallback_Args;
struct PJRT_KeyValueTryGetCallback_Args;

// ===========================================================================
// Enumerations. Plain (unscoped, no fixed base) to match the C enums' size.
// ===========================================================================

// Tag of an entry in an extension chain.
enum PJRT_Extension_Type {
  PJRT_Extension_Type_Gpu_Custom_Call = 0,
  PJRT_Extension_Type_Profiler = 1,
  PJRT_Extension_Type_Custom_Partitioner = 2,
  PJRT_Extension_Type_Stream = 3,
  PJRT_Extension_Type_Layouts = 4,
  PJRT_Extension_Type_FFI = 5,
  PJRT_Extension_Type_MemoryDescriptions = 6,
  PJRT_Extension_Type_Triton = 7,
  PJRT_Extension_Type_RawBuffer = 8,
  PJRT_Extension_Type_PhaseCompile = 9,
  PJRT_Extension_Type_Example = 10,
  PJRT_Extension_Type_Unknown = 11,
  PJRT_Extension_Type_CrossHostTransfers = 12,
  PJRT_Extension_Type_ExecutableMetadata = 13,
  PJRT_Extension_Type_Callback = 14,
  PJRT_Extension_Type_HostAllocator = 15,
};

// Status codes (absl::StatusCode numbering).
enum PJRT_Error_Code {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16,
};

// Element types. Values are positional in the ABI, written out here.
enum PJRT_Buffer_Type {
  PJRT_Buffer_Type_INVALID = 0,
  PJRT_Buffer_Type_PRED = 1,
  PJRT_Buffer_Type_S8 = 2,
  PJRT_Buffer_Type_S16 = 3,
  PJRT_Buffer_Type_S32 = 4,
  PJRT_Buffer_Type_S64 = 5,
  PJRT_Buffer_Type_U8 = 6,
  PJRT_Buffer_Type_U16 = 7,
  PJRT_Buffer_Type_U32 = 8,
  PJRT_Buffer_Type_U64 = 9,
  PJRT_Buffer_Type_F16 = 10,
  PJRT_Buffer_Type_F32 = 11,
  PJRT_Buffer_Type_F64 = 12,
  PJRT_Buffer_Type_BF16 = 13,
  PJRT_Buffer_Type_C64 = 14,   // complex<float>
  PJRT_Buffer_Type_C128 = 15,  // complex<double>
  PJRT_Buffer_Type_F8E5M2 = 16,
  PJRT_Buffer_Type_F8E4M3FN = 17,
  PJRT_Buffer_Type_F8E4M3B11FNUZ = 18,
  PJRT_Buffer_Type_F8E5M2FNUZ = 19,
  PJRT_Buffer_Type_F8E4M3FNUZ = 20,
  PJRT_Buffer_Type_S4 = 21,
  PJRT_Buffer_Type_U4 = 22,
  PJRT_Buffer_Type_TOKEN = 23,
  PJRT_Buffer_Type_S2 = 24,
  PJRT_Buffer_Type_U2 = 25,
  PJRT_Buffer_Type_F8E4M3 = 26,
  PJRT_Buffer_Type_F8E3M4 = 27,
  PJRT_Buffer_Type_F8E8M0FNU = 28,
  PJRT_Buffer_Type_F4E2M1FN = 29,
};

// How long the plugin may look at host memory handed to BufferFromHostBuffer.
enum PJRT_HostBufferSemantics {
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,          // copy before returning
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,  // until done_with_host_buffer
  PJRT_HostBufferSemantics_kImmutableZeroCopy = 2,                // may alias, read-only
  PJRT_HostBufferSemantics_kMutableZeroCopy = 3,                  // may alias and write
};

// Which member of PJRT_NamedValue's union is live.
enum PJRT_NamedValue_Type {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64 = 1,
  PJRT_NamedValue_kInt64List = 2,
  PJRT_NamedValue_kFloat = 3,
  PJRT_NamedValue_kBool = 4,
};

// ===========================================================================
// Small shared structs.
// ===========================================================================

// Head of a singly linked list of optional extensions.
struct PJRT_Extension_Base {
  size_t struct_size;
  PJRT_Extension_Type type;
  PJRT_Extension_Base* next;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Extension_Base, next);

// Version a plugin reports in PJRT_Api::pjrt_api_version.
struct PJRT_Api_Version {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  int major_version;
  int minor_version;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Api_Version, minor_version);

// Key/value option (client create options, plugin and device attributes).
struct PJRT_NamedValue {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* name;  // not NUL-terminated; see name_size
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size;  // element count for strings/lists, 1 for scalars
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_NamedValue, value_size);

// A program handed to the compiler. format is "mlir", "hlo", ...
struct PJRT_Program {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Program, format_size);

// Per-launch options for PJRT_LoadedExecutable_Execute.
struct PJRT_ExecuteOptions {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_SendCallbackInfo** send_callbacks;  // [num_devices][num_send_ops]
  PJRT_RecvCallbackInfo** recv_callbacks;  // [num_devices][num_recv_ops]
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext* context;
  const char* call_location;  // NUL-terminated, optional
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_ExecuteOptions, incarnation_ids);

// Callback pointer types that appear inside args structs.
using PJRT_Event_OnReadyCallback = void (*)(PJRT_Error* error, void* user_arg);
using PJRT_KeyValueGetCallback = PJRT_Error* (*)(PJRT_KeyValueGetCallback_Args* args);
using PJRT_KeyValuePutCallback = PJRT_Error* (*)(PJRT_KeyValuePutCallback_Args* args);
using PJRT_KeyValueTryGetCallback = PJRT_Error* (*)(PJRT_KeyValueTryGetCallback_Args* args);

// ===========================================================================
// Args structs and function types.
//
// Every args struct begins with {struct_size, extension_start}. Callers set
// struct_size to the matching _STRUCT_SIZE and zero everything else they do
// not fill in. Fields marked "out" are written by the plugin.
//
// Function types: `PJRT_X` is the function type `PJRT_Error*(PJRT_X_Args*)`
// (a null return means success) unless declared otherwise.
// ===========================================================================

#define TTPU_PJRT_FN(name) using name = PJRT_Error*(name##_Args * args)

// ---- Errors ---------------------------------------------------------------

struct PJRT_Error_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Error* error;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Error_Destroy_Args, error);
using PJRT_Error_Destroy = void(PJRT_Error_Destroy_Args* args);

struct PJRT_Error_Message_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  const char* message;  // out; lives as long as `error`
  size_t message_size;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Error_Message_Args, message_size);
using PJRT_Error_Message = void(PJRT_Error_Message_Args* args);

struct PJRT_Error_GetCode_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_Code code;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Error_GetCode_Args, code);
TTPU_PJRT_FN(PJRT_Error_GetCode);

// ---- Plugin ---------------------------------------------------------------

struct PJRT_Plugin_Initialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start);
TTPU_PJRT_FN(PJRT_Plugin_Initialize);  // once, before anything else

struct PJRT_Plugin_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* attributes;  // out; process lifetime
  size_t num_attributes;              // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes);
TTPU_PJRT_FN(PJRT_Plugin_Attributes);

// ---- Events ---------------------------------------------------------------

struct PJRT_Event_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Event_Destroy_Args, event);
TTPU_PJRT_FN(PJRT_Event_Destroy);

struct PJRT_Event_IsReady_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  bool is_ready;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Event_IsReady_Args, is_ready);
TTPU_PJRT_FN(PJRT_Event_IsReady);

struct PJRT_Event_Error_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Event_Error_Args, event);
TTPU_PJRT_FN(PJRT_Event_Error);  // only valid once the event is ready

struct PJRT_Event_Await_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Event_Await_Args, event);
TTPU_PJRT_FN(PJRT_Event_Await);  // blocks; returns the event's error

struct PJRT_Event_OnReady_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  PJRT_Event_OnReadyCallback callback;  // takes ownership of its error
  void* user_arg;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Event_OnReady_Args, user_arg);
TTPU_PJRT_FN(PJRT_Event_OnReady);

// ---- Client ---------------------------------------------------------------

struct PJRT_Client_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  PJRT_KeyValueGetCallback kv_get_callback;  // optional distributed KV store
  void* kv_get_user_arg;
  PJRT_KeyValuePutCallback kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client;  // out
  PJRT_KeyValueTryGetCallback kv_try_get_callback;
  void* kv_try_get_user_arg;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg);
TTPU_PJRT_FN(PJRT_Client_Create);

struct PJRT_Client_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_Destroy_Args, client);
TTPU_PJRT_FN(PJRT_Client_Destroy);

struct PJRT_Client_PlatformName_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_name;  // out; owned by client
  size_t platform_name_size;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size);
TTPU_PJRT_FN(PJRT_Client_PlatformName);

struct PJRT_Client_PlatformVersion_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_version;  // out; owned by client
  size_t platform_version_size;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_PlatformVersion_Args, platform_version_size);
TTPU_PJRT_FN(PJRT_Client_PlatformVersion);

struct PJRT_Client_Devices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* devices;  // out; owned by client
  size_t num_devices;           // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_Devices_Args, num_devices);
TTPU_PJRT_FN(PJRT_Client_Devices);

struct PJRT_Client_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* addressable_devices;  // out; owned by client
  size_t num_addressable_devices;           // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices);
TTPU_PJRT_FN(PJRT_Client_AddressableDevices);

struct PJRT_Client_Compile_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options;  // serialized xla.CompileOptionsProto
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_Compile_Args, executable);
TTPU_PJRT_FN(PJRT_Client_Compile);

struct PJRT_Client_BufferFromHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const void* data;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides;  // optional; empty means dense row-major
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device;
  PJRT_Memory* memory;                      // optional; overrides device
  PJRT_Buffer_MemoryLayout* device_layout;  // optional
  PJRT_Event* done_with_host_buffer;        // out; caller destroys
  PJRT_Buffer* buffer;                      // out; caller destroys
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer);
TTPU_PJRT_FN(PJRT_Client_BufferFromHostBuffer);

// ---- Device descriptions --------------------------------------------------

struct PJRT_DeviceDescription_Id_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int id;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_DeviceDescription_Id_Args, id);
TTPU_PJRT_FN(PJRT_DeviceDescription_Id);

struct PJRT_DeviceDescription_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* device_kind;  // out
  size_t device_kind_size;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_DeviceDescription_Kind_Args, device_kind_size);
TTPU_PJRT_FN(PJRT_DeviceDescription_Kind);

struct PJRT_DeviceDescription_DebugString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* debug_string;  // out
  size_t debug_string_size;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_DeviceDescription_DebugString_Args, debug_string_size);
TTPU_PJRT_FN(PJRT_DeviceDescription_DebugString);

// ---- Devices --------------------------------------------------------------

struct PJRT_Device_GetDescription_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_DeviceDescription* device_description;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description);
TTPU_PJRT_FN(PJRT_Device_GetDescription);

// All outputs; only bytes_in_use is mandatory, the rest carry an *_is_set flag.
struct PJRT_Device_MemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int64_t bytes_in_use;
  int64_t peak_bytes_in_use;
  bool peak_bytes_in_use_is_set;
  int64_t num_allocs;
  bool num_allocs_is_set;
  int64_t largest_alloc_size;
  bool largest_alloc_size_is_set;
  int64_t bytes_limit;
  bool bytes_limit_is_set;
  int64_t bytes_reserved;
  bool bytes_reserved_is_set;
  int64_t peak_bytes_reserved;
  bool peak_bytes_reserved_is_set;
  int64_t bytes_reservable_limit;
  bool bytes_reservable_limit_is_set;
  int64_t largest_free_block_bytes;
  bool largest_free_block_bytes_is_set;
  int64_t pool_bytes;
  bool pool_bytes_is_set;
  int64_t peak_pool_bytes;
  bool peak_pool_bytes_is_set;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);
TTPU_PJRT_FN(PJRT_Device_MemoryStats);

// ---- Executables ----------------------------------------------------------

struct PJRT_Executable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable);
TTPU_PJRT_FN(PJRT_Executable_Destroy);

struct PJRT_Executable_NumOutputs_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs;  // out; per device
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs);
TTPU_PJRT_FN(PJRT_Executable_NumOutputs);

struct PJRT_Executable_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Executable* executable;
  const char* serialized_bytes;  // out; valid until the deleter runs
  size_t serialized_bytes_size;  // out
  PJRT_SerializedExecutable* serialized_executable;  // out; backing storage
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable* exec);  // out; call once
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter);
TTPU_PJRT_FN(PJRT_Executable_Serialize);

struct PJRT_Executable_DeserializeAndLoad_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable;  // out
  const char* overridden_serialized_compile_options;  // optional
  size_t overridden_serialized_compile_options_size;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args,
                        overridden_serialized_compile_options_size);
TTPU_PJRT_FN(PJRT_Executable_DeserializeAndLoad);

struct PJRT_LoadedExecutable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable);
TTPU_PJRT_FN(PJRT_LoadedExecutable_Destroy);

struct PJRT_LoadedExecutable_GetExecutable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* loaded_executable;
  PJRT_Executable* executable;  // out; caller destroys
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable);
TTPU_PJRT_FN(PJRT_LoadedExecutable_GetExecutable);

struct PJRT_LoadedExecutable_Execute_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists;  // [num_devices][num_args]
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;    // [num_devices][num_outputs], filled in
  PJRT_Event** device_complete_events;  // optional [num_devices], filled in
  PJRT_Device* execute_device;          // optional single-device override
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device);
TTPU_PJRT_FN(PJRT_LoadedExecutable_Execute);

// ---- Buffers --------------------------------------------------------------

struct PJRT_Buffer_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer);
TTPU_PJRT_FN(PJRT_Buffer_Destroy);

struct PJRT_Buffer_ElementType_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type type;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type);
TTPU_PJRT_FN(PJRT_Buffer_ElementType);

struct PJRT_Buffer_Dimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* dims;  // out; owned by buffer
  size_t num_dims;      // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims);
TTPU_PJRT_FN(PJRT_Buffer_Dimensions);

struct PJRT_Buffer_ToHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* src;
  PJRT_Buffer_MemoryLayout* host_layout;  // optional
  void* dst;        // null: only report the needed size in dst_size
  size_t dst_size;  // in/out, bytes
  PJRT_Event* event;  // out; caller destroys
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event);
TTPU_PJRT_FN(PJRT_Buffer_ToHostBuffer);

struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  size_t on_device_size_in_bytes;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
TTPU_PJRT_FN(PJRT_Buffer_OnDeviceSizeInBytes);

struct PJRT_Buffer_IsDeleted_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool is_deleted;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_IsDeleted_Args, is_deleted);
TTPU_PJRT_FN(PJRT_Buffer_IsDeleted);

struct PJRT_Buffer_CopyToDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* dst_device;
  PJRT_Buffer* dst_buffer;  // out; caller destroys
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_CopyToDevice_Args, dst_buffer);
TTPU_PJRT_FN(PJRT_Buffer_CopyToDevice);

struct PJRT_Buffer_Device_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* device;  // out
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_Device_Args, device);
TTPU_PJRT_FN(PJRT_Buffer_Device);

struct PJRT_Buffer_ReadyEvent_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Event* event;  // out; caller destroys
};
TTPU_DEFINE_STRUCT_SIZE(PJRT_Buffer_ReadyEvent_Args, event);
TTPU_PJRT_FN(PJRT_Buffer_ReadyEvent);

#undef TTPU_PJRT_FN

// ===========================================================================
// The function table returned by a plugin's GetPjrtApi().
//
// TTPU_PJRT_API_SLOTS(TYPED, OPAQUE) walks all 118 slots of API 0.81 in ABI
// order. TYPED(name) marks a slot we call (declared above as a function type
// `name`); OPAQUE(name) marks one we never call. New slots are only ever
// appended by upstream, so the order below is frozen.
// ===========================================================================
// clang-format off
#define TTPU_PJRT_API_SLOTS(TYPED, OPAQUE)                                                     \
  /* errors */                                                                                 \
  TYPED(PJRT_Error_Destroy) TYPED(PJRT_Error_Message) TYPED(PJRT_Error_GetCode)                \
  /* plugin */                                                                                 \
  TYPED(PJRT_Plugin_Initialize) TYPED(PJRT_Plugin_Attributes)                                  \
  /* events */                                                                                 \
  TYPED(PJRT_Event_Destroy) TYPED(PJRT_Event_IsReady) TYPED(PJRT_Event_Error)                  \
  TYPED(PJRT_Event_Await) TYPED(PJRT_Event_OnReady)                                            \
  /* client */                                                                                 \
  TYPED(PJRT_Client_Create) TYPED(PJRT_Client_Destroy) TYPED(PJRT_Client_PlatformName)         \
  OPAQUE(PJRT_Client_ProcessIndex) TYPED(PJRT_Client_PlatformVersion)                          \
  TYPED(PJRT_Client_Devices) TYPED(PJRT_Client_AddressableDevices)                             \
  OPAQUE(PJRT_Client_LookupDevice) OPAQUE(PJRT_Client_LookupAddressableDevice)                 \
  OPAQUE(PJRT_Client_AddressableMemories) TYPED(PJRT_Client_Compile)                           \
  OPAQUE(PJRT_Client_DefaultDeviceAssignment) TYPED(PJRT_Client_BufferFromHostBuffer)          \
  /* device descriptions */                                                                    \
  TYPED(PJRT_DeviceDescription_Id) OPAQUE(PJRT_DeviceDescription_ProcessIndex)                 \
  OPAQUE(PJRT_DeviceDescription_Attributes) TYPED(PJRT_DeviceDescription_Kind)                 \
  TYPED(PJRT_DeviceDescription_DebugString) OPAQUE(PJRT_DeviceDescription_ToString)            \
  /* devices */                                                                                \
  TYPED(PJRT_Device_GetDescription) OPAQUE(PJRT_Device_IsAddressable)                          \
  OPAQUE(PJRT_Device_LocalHardwareId) OPAQUE(PJRT_Device_AddressableMemories)                  \
  OPAQUE(PJRT_Device_DefaultMemory) TYPED(PJRT_Device_MemoryStats)                             \
  /* memories */                                                                               \
  OPAQUE(PJRT_Memory_Id) OPAQUE(PJRT_Memory_Kind) OPAQUE(PJRT_Memory_DebugString)              \
  OPAQUE(PJRT_Memory_ToString) OPAQUE(PJRT_Memory_AddressableByDevices)                        \
  /* executables */                                                                            \
  TYPED(PJRT_Executable_Destroy) OPAQUE(PJRT_Executable_Name)                                  \
  OPAQUE(PJRT_Executable_NumReplicas) OPAQUE(PJRT_Executable_NumPartitions)                    \
  TYPED(PJRT_Executable_NumOutputs) OPAQUE(PJRT_Executable_SizeOfGeneratedCodeInBytes)         \
  OPAQUE(PJRT_Executable_GetCostAnalysis) OPAQUE(PJRT_Executable_OutputMemoryKinds)            \
  OPAQUE(PJRT_Executable_OptimizedProgram) TYPED(PJRT_Executable_Serialize)                    \
  /* loaded executables */                                                                     \
  TYPED(PJRT_LoadedExecutable_Destroy) TYPED(PJRT_LoadedExecutable_GetExecutable)              \
  OPAQUE(PJRT_LoadedExecutable_AddressableDevices) OPAQUE(PJRT_LoadedExecutable_Delete)        \
  OPAQUE(PJRT_LoadedExecutable_IsDeleted) TYPED(PJRT_LoadedExecutable_Execute)                 \
  TYPED(PJRT_Executable_DeserializeAndLoad) OPAQUE(PJRT_LoadedExecutable_Fingerprint)          \
  /* buffers */                                                                                \
  TYPED(PJRT_Buffer_Destroy) TYPED(PJRT_Buffer_ElementType) TYPED(PJRT_Buffer_Dimensions)      \
  OPAQUE(PJRT_Buffer_UnpaddedDimensions) OPAQUE(PJRT_Buffer_DynamicDimensionIndices)           \
  OPAQUE(PJRT_Buffer_GetMemoryLayout) TYPED(PJRT_Buffer_OnDeviceSizeInBytes)                   \
  TYPED(PJRT_Buffer_Device) OPAQUE(PJRT_Buffer_Memory) OPAQUE(PJRT_Buffer_Delete)              \
  TYPED(PJRT_Buffer_IsDeleted) TYPED(PJRT_Buffer_CopyToDevice) TYPED(PJRT_Buffer_ToHostBuffer) \
  OPAQUE(PJRT_Buffer_IsOnCpu) TYPED(PJRT_Buffer_ReadyEvent) OPAQUE(PJRT_Buffer_UnsafePointer)  \
  OPAQUE(PJRT_Buffer_IncreaseExternalReferenceCount)                                           \
  OPAQUE(PJRT_Buffer_DecreaseExternalReferenceCount)                                           \
  OPAQUE(PJRT_Buffer_OpaqueDeviceMemoryDataPointer)                                            \
  /* host-to-device streams */                                                                 \
  OPAQUE(PJRT_CopyToDeviceStream_Destroy) OPAQUE(PJRT_CopyToDeviceStream_AddChunk)             \
  OPAQUE(PJRT_CopyToDeviceStream_TotalBytes) OPAQUE(PJRT_CopyToDeviceStream_GranuleSize)       \
  OPAQUE(PJRT_CopyToDeviceStream_CurrentBytes)                                                 \
  /* topology */                                                                               \
  OPAQUE(PJRT_TopologyDescription_Create) OPAQUE(PJRT_TopologyDescription_Destroy)             \
  OPAQUE(PJRT_TopologyDescription_PlatformName) OPAQUE(PJRT_TopologyDescription_PlatformVersion) \
  OPAQUE(PJRT_TopologyDescription_GetDeviceDescriptions)                                       \
  OPAQUE(PJRT_TopologyDescription_Serialize) OPAQUE(PJRT_TopologyDescription_Attributes)       \
  /* ahead-of-time compile */                                                                  \
  OPAQUE(PJRT_Compile)                                                                         \
  /* appended in later minor versions, in order of arrival */                                  \
  OPAQUE(PJRT_Executable_OutputElementTypes) OPAQUE(PJRT_Executable_OutputDimensions)          \
  OPAQUE(PJRT_Buffer_CopyToMemory) OPAQUE(PJRT_Client_CreateViewOfDeviceBuffer)                \
  OPAQUE(PJRT_Executable_Fingerprint) OPAQUE(PJRT_Client_TopologyDescription)                  \
  OPAQUE(PJRT_Executable_GetCompiledMemoryStats) OPAQUE(PJRT_Memory_Kind_Id)                   \
  OPAQUE(PJRT_ExecuteContext_Create) OPAQUE(PJRT_ExecuteContext_Destroy)                       \
  OPAQUE(PJRT_Buffer_CopyRawToHost)                                                            \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_Destroy)                                        \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_TransferData)                                   \
  OPAQUE(PJRT_Client_CreateBuffersForAsyncHostToDevice)                                        \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer)                                 \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_Device)                                         \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_BufferCount)                                    \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_BufferSize)                                     \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_SetBufferError)                                 \
  OPAQUE(PJRT_AsyncHostToDeviceTransferManager_AddMetadata)                                    \
  OPAQUE(PJRT_Client_DmaMap) OPAQUE(PJRT_Client_DmaUnmap)                                      \
  OPAQUE(PJRT_Client_CreateUninitializedBuffer) OPAQUE(PJRT_Client_UpdateGlobalProcessInfo)    \
  OPAQUE(PJRT_TopologyDescription_Deserialize) OPAQUE(PJRT_Client_CreateAliasBuffer)           \
  OPAQUE(PJRT_Client_FulfillAliasBuffer) OPAQUE(PJRT_LoadedExecutable_GetDeviceAssignment)
// clang-format on

// The member type is written fully qualified: an unqualified `T* T;` inside a
// class is ill-formed in C++ ("changes meaning") and GCC rejects it.
#define TTPU_PJRT_TYPED_SLOT_(name) ::ttpu::abi::name* name;
#define TTPU_PJRT_OPAQUE_SLOT_(name) void* name;
#define TTPU_PJRT_COUNT_SLOT_(name) +1

struct PJRT_Api {
  size_t struct_size;  // how much of this table the plugin filled in
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;
  TTPU_PJRT_API_SLOTS(TTPU_PJRT_TYPED_SLOT_, TTPU_PJRT_OPAQUE_SLOT_)
};

inline constexpr int kPjrtApiSlotCount =
    0 TTPU_PJRT_API_SLOTS(TTPU_PJRT_COUNT_SLOT_, TTPU_PJRT_COUNT_SLOT_);
static_assert(kPjrtApiSlotCount == 118, "PJRT 0.81 has 118 function slots");

TTPU_DEFINE_STRUCT_SIZE(PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment);

#undef TTPU_PJRT_TYPED_SLOT_
#undef TTPU_PJRT_OPAQUE_SLOT_
#undef TTPU_PJRT_COUNT_SLOT_

// Whether `api` (as reported by the plugin) has a slot at `offset`, i.e. the
// plugin was built against a version that already had that function.
constexpr bool HasSlot(const PJRT_Api* api, size_t offset) {
  return api != nullptr && api->struct_size >= offset + sizeof(void*);
}

// Name of the exported entry point every plugin provides.
inline constexpr const char kGetPjrtApiSymbol[] = "GetPjrtApi";
using GetPjrtApiFn = const PJRT_Api* (*)();

}  // namespace ttpu::abi
