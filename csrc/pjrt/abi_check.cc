// Build-time cross-check of pjrt_abi.h against the upstream pjrt_c_api.h.
//
// Note: compile this file without -pedantic. Under GCC -pedantic the upstream
// header itself is rejected ("declaration changes meaning" for every
// `PJRT_X* PJRT_X;` slot in its PJRT_Api), and GCC 12 cannot silence that.
//
// Only compiled into anything when the build located an upstream header and
// defined TTPU_HAVE_OFFICIAL_PJRT_HEADER (with its directory on the include
// path). Everything here is static_assert; the object file is empty.
#ifdef TTPU_HAVE_OFFICIAL_PJRT_HEADER

#include <cstddef>
#include <type_traits>

#include "pjrt_c_api.h"  // upstream, global namespace
#include "pjrt_abi.h"

namespace {

namespace ours = ::ttpu::abi;

// ---- version --------------------------------------------------------------
static_assert(ours::kTargetApiMajor == PJRT_API_MAJOR, "PJRT major version differs");
static_assert(ours::kTargetApiMinor == PJRT_API_MINOR,
              "upstream header is a different PJRT minor version; re-check pjrt_abi.h");

// ---- helpers --------------------------------------------------------------

// Whole-struct shape plus the ABI struct-size constant.
#define TTPU_CHECK_STRUCT(T)                                                    \
  static_assert(sizeof(ours::T) == sizeof(::T), #T ": sizeof differs");         \
  static_assert(alignof(ours::T) == alignof(::T), #T ": alignof differs");      \
  static_assert(std::is_standard_layout_v<ours::T>, #T ": not standard layout")

#define TTPU_CHECK_STRUCT_SIZE(T)                                               \
  static_assert(ours::T##_STRUCT_SIZE == static_cast<std::size_t>(::T##_STRUCT_SIZE), \
                #T "_STRUCT_SIZE differs")

// One field: same offset and same size.
#define TTPU_CHECK_FIELD(T, f)                                                  \
  static_assert(offsetof(ours::T, f) == offsetof(::T, f), #T "::" #f ": offset differs"); \
  static_assert(sizeof(ours::T::f) == sizeof(::T::f), #T "::" #f ": size differs")

// Common prefix of every args struct.
#define TTPU_CHECK_ARGS_HEAD(T)          \
  TTPU_CHECK_STRUCT(T);                  \
  TTPU_CHECK_STRUCT_SIZE(T);             \
  TTPU_CHECK_FIELD(T, struct_size);      \
  TTPU_CHECK_FIELD(T, extension_start)

#define TTPU_CHECK_ENUM_TYPE(E) \
  static_assert(sizeof(ours::E) == sizeof(::E), #E ": enum size differs")

#define TTPU_CHECK_ENUMERATOR(v) \
  static_assert(static_cast<long long>(ours::v) == static_cast<long long>(::v), #v " differs")

// ---- enums ----------------------------------------------------------------
TTPU_CHECK_ENUM_TYPE(PJRT_Extension_Type);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Gpu_Custom_Call);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Profiler);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Custom_Partitioner);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Stream);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Layouts);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_FFI);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_MemoryDescriptions);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Triton);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_RawBuffer);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_PhaseCompile);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Example);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Unknown);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_CrossHostTransfers);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_ExecutableMetadata);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_Callback);
TTPU_CHECK_ENUMERATOR(PJRT_Extension_Type_HostAllocator);

TTPU_CHECK_ENUM_TYPE(PJRT_Error_Code);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_OK);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_CANCELLED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_UNKNOWN);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_INVALID_ARGUMENT);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_DEADLINE_EXCEEDED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_NOT_FOUND);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_ALREADY_EXISTS);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_PERMISSION_DENIED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_RESOURCE_EXHAUSTED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_FAILED_PRECONDITION);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_ABORTED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_OUT_OF_RANGE);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_UNIMPLEMENTED);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_INTERNAL);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_UNAVAILABLE);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_DATA_LOSS);
TTPU_CHECK_ENUMERATOR(PJRT_Error_Code_UNAUTHENTICATED);

TTPU_CHECK_ENUM_TYPE(PJRT_Buffer_Type);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_INVALID);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_PRED);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S8);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S16);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S32);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S64);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U8);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U16);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U32);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U64);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F16);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F32);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F64);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_BF16);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_C64);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_C128);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E5M2);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E4M3FN);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E4M3B11FNUZ);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E5M2FNUZ);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E4M3FNUZ);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S4);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U4);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_TOKEN);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_S2);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_U2);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E4M3);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E3M4);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F8E8M0FNU);
TTPU_CHECK_ENUMERATOR(PJRT_Buffer_Type_F4E2M1FN);

TTPU_CHECK_ENUM_TYPE(PJRT_HostBufferSemantics);
TTPU_CHECK_ENUMERATOR(PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
TTPU_CHECK_ENUMERATOR(PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes);
TTPU_CHECK_ENUMERATOR(PJRT_HostBufferSemantics_kImmutableZeroCopy);
TTPU_CHECK_ENUMERATOR(PJRT_HostBufferSemantics_kMutableZeroCopy);

TTPU_CHECK_ENUM_TYPE(PJRT_NamedValue_Type);
TTPU_CHECK_ENUMERATOR(PJRT_NamedValue_kString);
TTPU_CHECK_ENUMERATOR(PJRT_NamedValue_kInt64);
TTPU_CHECK_ENUMERATOR(PJRT_NamedValue_kInt64List);
TTPU_CHECK_ENUMERATOR(PJRT_NamedValue_kFloat);
TTPU_CHECK_ENUMERATOR(PJRT_NamedValue_kBool);

// ---- shared structs -------------------------------------------------------
TTPU_CHECK_STRUCT(PJRT_Extension_Base);
TTPU_CHECK_STRUCT_SIZE(PJRT_Extension_Base);
TTPU_CHECK_FIELD(PJRT_Extension_Base, struct_size);
TTPU_CHECK_FIELD(PJRT_Extension_Base, type);
TTPU_CHECK_FIELD(PJRT_Extension_Base, next);

TTPU_CHECK_ARGS_HEAD(PJRT_Api_Version);
TTPU_CHECK_FIELD(PJRT_Api_Version, major_version);
TTPU_CHECK_FIELD(PJRT_Api_Version, minor_version);

TTPU_CHECK_ARGS_HEAD(PJRT_NamedValue);
TTPU_CHECK_FIELD(PJRT_NamedValue, name);
TTPU_CHECK_FIELD(PJRT_NamedValue, name_size);
TTPU_CHECK_FIELD(PJRT_NamedValue, type);
TTPU_CHECK_FIELD(PJRT_NamedValue, string_value);
TTPU_CHECK_FIELD(PJRT_NamedValue, int64_value);
TTPU_CHECK_FIELD(PJRT_NamedValue, int64_array_value);
TTPU_CHECK_FIELD(PJRT_NamedValue, float_value);
TTPU_CHECK_FIELD(PJRT_NamedValue, bool_value);
TTPU_CHECK_FIELD(PJRT_NamedValue, value_size);

TTPU_CHECK_ARGS_HEAD(PJRT_Program);
TTPU_CHECK_FIELD(PJRT_Program, code);
TTPU_CHECK_FIELD(PJRT_Program, code_size);
TTPU_CHECK_FIELD(PJRT_Program, format);
TTPU_CHECK_FIELD(PJRT_Program, format_size);

TTPU_CHECK_ARGS_HEAD(PJRT_ExecuteOptions);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, send_callbacks);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, recv_callbacks);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, num_send_ops);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, num_recv_ops);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, launch_id);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, non_donatable_input_indices);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, num_non_donatable_input_indices);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, context);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, call_location);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, num_tasks);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, task_ids);
TTPU_CHECK_FIELD(PJRT_ExecuteOptions, incarnation_ids);

// ---- args structs ---------------------------------------------------------
TTPU_CHECK_ARGS_HEAD(PJRT_Error_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_Error_Destroy_Args, error);

TTPU_CHECK_ARGS_HEAD(PJRT_Error_Message_Args);
TTPU_CHECK_FIELD(PJRT_Error_Message_Args, error);
TTPU_CHECK_FIELD(PJRT_Error_Message_Args, message);
TTPU_CHECK_FIELD(PJRT_Error_Message_Args, message_size);

TTPU_CHECK_ARGS_HEAD(PJRT_Error_GetCode_Args);
TTPU_CHECK_FIELD(PJRT_Error_GetCode_Args, error);
TTPU_CHECK_FIELD(PJRT_Error_GetCode_Args, code);

TTPU_CHECK_ARGS_HEAD(PJRT_Plugin_Initialize_Args);

TTPU_CHECK_ARGS_HEAD(PJRT_Plugin_Attributes_Args);
TTPU_CHECK_FIELD(PJRT_Plugin_Attributes_Args, attributes);
TTPU_CHECK_FIELD(PJRT_Plugin_Attributes_Args, num_attributes);

TTPU_CHECK_ARGS_HEAD(PJRT_Event_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_Event_Destroy_Args, event);

TTPU_CHECK_ARGS_HEAD(PJRT_Event_IsReady_Args);
TTPU_CHECK_FIELD(PJRT_Event_IsReady_Args, event);
TTPU_CHECK_FIELD(PJRT_Event_IsReady_Args, is_ready);

TTPU_CHECK_ARGS_HEAD(PJRT_Event_Error_Args);
TTPU_CHECK_FIELD(PJRT_Event_Error_Args, event);

TTPU_CHECK_ARGS_HEAD(PJRT_Event_Await_Args);
TTPU_CHECK_FIELD(PJRT_Event_Await_Args, event);

TTPU_CHECK_ARGS_HEAD(PJRT_Event_OnReady_Args);
TTPU_CHECK_FIELD(PJRT_Event_OnReady_Args, event);
TTPU_CHECK_FIELD(PJRT_Event_OnReady_Args, callback);
TTPU_CHECK_FIELD(PJRT_Event_OnReady_Args, user_arg);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_Create_Args);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, create_options);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, num_options);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_get_callback);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_get_user_arg);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_put_callback);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_put_user_arg);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_try_get_callback);
TTPU_CHECK_FIELD(PJRT_Client_Create_Args, kv_try_get_user_arg);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_Client_Destroy_Args, client);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_PlatformName_Args);
TTPU_CHECK_FIELD(PJRT_Client_PlatformName_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_PlatformName_Args, platform_name);
TTPU_CHECK_FIELD(PJRT_Client_PlatformName_Args, platform_name_size);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_PlatformVersion_Args);
TTPU_CHECK_FIELD(PJRT_Client_PlatformVersion_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_PlatformVersion_Args, platform_version);
TTPU_CHECK_FIELD(PJRT_Client_PlatformVersion_Args, platform_version_size);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_Devices_Args);
TTPU_CHECK_FIELD(PJRT_Client_Devices_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_Devices_Args, devices);
TTPU_CHECK_FIELD(PJRT_Client_Devices_Args, num_devices);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_AddressableDevices_Args);
TTPU_CHECK_FIELD(PJRT_Client_AddressableDevices_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_AddressableDevices_Args, addressable_devices);
TTPU_CHECK_FIELD(PJRT_Client_AddressableDevices_Args, num_addressable_devices);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_Compile_Args);
TTPU_CHECK_FIELD(PJRT_Client_Compile_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_Compile_Args, program);
TTPU_CHECK_FIELD(PJRT_Client_Compile_Args, compile_options);
TTPU_CHECK_FIELD(PJRT_Client_Compile_Args, compile_options_size);
TTPU_CHECK_FIELD(PJRT_Client_Compile_Args, executable);

TTPU_CHECK_ARGS_HEAD(PJRT_Client_BufferFromHostBuffer_Args);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, client);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, data);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, type);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, dims);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, num_dims);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, byte_strides);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, num_byte_strides);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, host_buffer_semantics);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, device);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, memory);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, device_layout);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, done_with_host_buffer);
TTPU_CHECK_FIELD(PJRT_Client_BufferFromHostBuffer_Args, buffer);

TTPU_CHECK_ARGS_HEAD(PJRT_DeviceDescription_Id_Args);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_Id_Args, device_description);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_Id_Args, id);

TTPU_CHECK_ARGS_HEAD(PJRT_DeviceDescription_Kind_Args);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_Kind_Args, device_description);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_Kind_Args, device_kind);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_Kind_Args, device_kind_size);

TTPU_CHECK_ARGS_HEAD(PJRT_DeviceDescription_DebugString_Args);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_DebugString_Args, device_description);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_DebugString_Args, debug_string);
TTPU_CHECK_FIELD(PJRT_DeviceDescription_DebugString_Args, debug_string_size);

TTPU_CHECK_ARGS_HEAD(PJRT_Device_GetDescription_Args);
TTPU_CHECK_FIELD(PJRT_Device_GetDescription_Args, device);
TTPU_CHECK_FIELD(PJRT_Device_GetDescription_Args, device_description);

TTPU_CHECK_ARGS_HEAD(PJRT_Device_MemoryStats_Args);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, device);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_in_use);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_bytes_in_use);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_bytes_in_use_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, num_allocs);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, num_allocs_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, largest_alloc_size);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, largest_alloc_size_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_limit);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_limit_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_reserved);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_reserved_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_bytes_reserved);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_bytes_reserved_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_reservable_limit);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, bytes_reservable_limit_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, largest_free_block_bytes);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, largest_free_block_bytes_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, pool_bytes);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, pool_bytes_is_set);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_pool_bytes);
TTPU_CHECK_FIELD(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);

TTPU_CHECK_ARGS_HEAD(PJRT_Executable_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_Executable_Destroy_Args, executable);

TTPU_CHECK_ARGS_HEAD(PJRT_Executable_NumOutputs_Args);
TTPU_CHECK_FIELD(PJRT_Executable_NumOutputs_Args, executable);
TTPU_CHECK_FIELD(PJRT_Executable_NumOutputs_Args, num_outputs);

TTPU_CHECK_ARGS_HEAD(PJRT_Executable_Serialize_Args);
TTPU_CHECK_FIELD(PJRT_Executable_Serialize_Args, executable);
TTPU_CHECK_FIELD(PJRT_Executable_Serialize_Args, serialized_bytes);
TTPU_CHECK_FIELD(PJRT_Executable_Serialize_Args, serialized_bytes_size);
TTPU_CHECK_FIELD(PJRT_Executable_Serialize_Args, serialized_executable);
TTPU_CHECK_FIELD(PJRT_Executable_Serialize_Args, serialized_executable_deleter);

TTPU_CHECK_ARGS_HEAD(PJRT_Executable_DeserializeAndLoad_Args);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args, client);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args, serialized_executable);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args, serialized_executable_size);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args, loaded_executable);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options);
TTPU_CHECK_FIELD(PJRT_Executable_DeserializeAndLoad_Args,
                 overridden_serialized_compile_options_size);

TTPU_CHECK_ARGS_HEAD(PJRT_LoadedExecutable_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Destroy_Args, executable);

TTPU_CHECK_ARGS_HEAD(PJRT_LoadedExecutable_GetExecutable_Args);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_GetExecutable_Args, loaded_executable);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_GetExecutable_Args, executable);

TTPU_CHECK_ARGS_HEAD(PJRT_LoadedExecutable_Execute_Args);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, executable);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, options);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, argument_lists);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, num_devices);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, num_args);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, output_lists);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, device_complete_events);
TTPU_CHECK_FIELD(PJRT_LoadedExecutable_Execute_Args, execute_device);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_Destroy_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_Destroy_Args, buffer);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_ElementType_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_ElementType_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_ElementType_Args, type);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_Dimensions_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_Dimensions_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_Dimensions_Args, dims);
TTPU_CHECK_FIELD(PJRT_Buffer_Dimensions_Args, num_dims);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_ToHostBuffer_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_ToHostBuffer_Args, src);
TTPU_CHECK_FIELD(PJRT_Buffer_ToHostBuffer_Args, host_layout);
TTPU_CHECK_FIELD(PJRT_Buffer_ToHostBuffer_Args, dst);
TTPU_CHECK_FIELD(PJRT_Buffer_ToHostBuffer_Args, dst_size);
TTPU_CHECK_FIELD(PJRT_Buffer_ToHostBuffer_Args, event);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_OnDeviceSizeInBytes_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_OnDeviceSizeInBytes_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_IsDeleted_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_IsDeleted_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_IsDeleted_Args, is_deleted);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_CopyToDevice_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_CopyToDevice_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_CopyToDevice_Args, dst_device);
TTPU_CHECK_FIELD(PJRT_Buffer_CopyToDevice_Args, dst_buffer);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_Device_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_Device_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_Device_Args, device);

TTPU_CHECK_ARGS_HEAD(PJRT_Buffer_ReadyEvent_Args);
TTPU_CHECK_FIELD(PJRT_Buffer_ReadyEvent_Args, buffer);
TTPU_CHECK_FIELD(PJRT_Buffer_ReadyEvent_Args, event);

// ---- the function table ---------------------------------------------------
TTPU_CHECK_STRUCT(PJRT_Api);
static_assert(ours::PJRT_Api_STRUCT_SIZE == static_cast<std::size_t>(::PJRT_Api_STRUCT_SIZE),
              "PJRT_Api_STRUCT_SIZE differs");
TTPU_CHECK_FIELD(PJRT_Api, struct_size);
TTPU_CHECK_FIELD(PJRT_Api, extension_start);
TTPU_CHECK_FIELD(PJRT_Api, pjrt_api_version);

// For a typed slot, also check the function signature has the same shape:
// one pointer parameter to an args struct of the same size and alignment, and
// the same return kind (void vs PJRT_Error*).
template <typename F>
struct FnShape;
template <typename R, typename A>
struct FnShape<R(A*)> {
  using Arg = A;
  static constexpr bool returns_void = std::is_void_v<R>;
  static constexpr std::size_t arg_size = sizeof(A);
  static constexpr std::size_t arg_align = alignof(A);
};

template <typename F>
using FnArg = typename FnShape<F>::Arg;

template <typename Ours, typename Theirs>
constexpr bool SameShape() {
  return FnShape<Ours>::returns_void == FnShape<Theirs>::returns_void &&
         FnShape<Ours>::arg_size == FnShape<Theirs>::arg_size &&
         FnShape<Ours>::arg_align == FnShape<Theirs>::arg_align;
}

#define TTPU_CHECK_SLOT_OFFSET_(name) TTPU_CHECK_FIELD(PJRT_Api, name);
#define TTPU_CHECK_TYPED_SLOT_(name)                                  \
  TTPU_CHECK_SLOT_OFFSET_(name)                                       \
  static_assert(SameShape<ours::name, ::name>(), #name ": signature differs"); \
  static_assert(std::is_same_v<decltype(ours::PJRT_Api::name), ours::name*>, \
                #name ": slot is not typed");                         \
  static_assert(std::is_same_v<FnArg<ours::name>, ours::name##_Args>, \
                #name ": takes the wrong args struct");
#define TTPU_CHECK_OPAQUE_SLOT_(name) TTPU_CHECK_SLOT_OFFSET_(name)

TTPU_PJRT_API_SLOTS(TTPU_CHECK_TYPED_SLOT_, TTPU_CHECK_OPAQUE_SLOT_)

// Our list must cover the upstream table exactly (no slot missing at the end).
static_assert(offsetof(ours::PJRT_Api, PJRT_LoadedExecutable_GetDeviceAssignment) +
                      sizeof(void*) ==
                  sizeof(::PJRT_Api),
              "upstream PJRT_Api has slots past our last one");

#undef TTPU_CHECK_SLOT_OFFSET_
#undef TTPU_CHECK_TYPED_SLOT_
#undef TTPU_CHECK_OPAQUE_SLOT_

}  // namespace

#endif  // TTPU_HAVE_OFFICIAL_PJRT_HEADER
