#include "runtime/storage.h"

#include "runtime/deferred.h"

#include <stdexcept>

namespace ttpu::runtime {

// The element type in a cache key: complex32 and bcomplex32 are ui32 words
// in StableHLO text but convert differently from each other and from uint32.
const char* key_name(shlo::ElemType t) {
  if (t == shlo::ElemType::C32) return "c32";
  if (t == shlo::ElemType::BC32) return "bc32";
  return shlo::mlir_name(t);
}

void append_type(std::string& key, const TensorType& t) {
  key += key_name(t.elem);
  for (auto d : t.dims) {
    key += ',';
    key += std::to_string(d);
  }
  key += ';';
}

namespace {

void append_view(std::string& key, const ops::ViewSpec& v) {
  key += key_name(v.elem);
  key += '[';
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    key += std::to_string(v.sizes[i]);
    key += ':';
    key += std::to_string(v.strides[i]);
    key += ',';
  }
  key += ']';  // the offset is a runtime input
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (auto s : sizes) n *= s;
  return n;
}

// A fresh storage's buffer: zeros, typed as the first view that touches it.
void ensure_buffer(StorageHandle& h, ElemType elem) {
  if (h.buffer) return;
  int size = shlo::byte_size(elem);
  if (h.nbytes % size != 0) elem = ElemType::U8, size = 1;
  h.buffer = zeros(TensorType{elem, {static_cast<int64_t>(h.nbytes / size)}}, h.device);
}

bool covers_whole_storage(const StorageHandle& h, const ops::ViewSpec& v) {
  return v.offset == 0 && ops::is_contiguous(v.sizes, v.strides) &&
         static_cast<size_t>(numel(v.sizes)) * shlo::byte_size(v.elem) == h.nbytes;
}

BufferPtr offset_buffer(int64_t offset, int device) {
  return upload_scalar(&offset, ElemType::S64, device);
}

// One path for the storage executables: run now (Strict/Debug) or record
// into the pending graph (DeferAndFuse), from the same emitter.
BufferPtr run_or_record(const std::string& key, const std::vector<BufferPtr>& inputs, const TensorType& out,
                        int device, const EmitFn& emit) {
  if (mode() == Mode::DeferAndFuse) return record(device, key, inputs, {out}, emit)[0];
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    std::vector<Value> ins;
    for (const auto& in : inputs) ins.push_back(b.arg(in->type()));
    std::vector<Value> r = emit(b, ins);
    return BuiltModule{b.module(r), {out}, {}};
  });
  std::vector<pjrt::Buffer*> raw;
  for (const auto& in : inputs) raw.push_back(in.get());
  return execute(*op, raw, device)[0];
}

}  // namespace

BufferPtr zeros(const TensorType& type, int device) {
  std::string key = "zeros|";
  append_type(key, type);
  return run_or_record(key, {}, type, device, [type](shlo::Builder& b, const std::vector<Value>&) {
    return std::vector<Value>{b.constant(0, type.elem, type.dims)};
  });
}

BufferPtr read_view(StorageHandle& h, const ops::ViewSpec& v) {
  ensure_buffer(h, v.elem);
  const TensorType& bt = h.buffer->type();
  if (bt.elem == v.elem && v.offset == 0 && bt.dims == v.sizes && ops::is_contiguous(v.sizes, v.strides))
    return h.buffer;
  std::string key = "read|";
  append_type(key, bt);
  append_view(key, v);
  TensorType out{v.elem, v.sizes};
  return run_or_record(key, {h.buffer, offset_buffer(v.offset, h.device)}, out, h.device,
                       [v](shlo::Builder& b, const std::vector<Value>& in) {
                         return std::vector<Value>{ops::gather_view(b, in[0], v, &in[1])};
                       });
}

namespace {
// A pending value that becomes the storage's buffer remembers which concrete
// buffer it replaces (through a chain of pending in-place updates).
void set_buffer(StorageHandle& h, BufferPtr fresh) {
  if (fresh->pending() && h.buffer && h.buffer != fresh)
    fresh->set_replaces(h.buffer->pending() && h.buffer->replaces() ? h.buffer->replaces() : h.buffer.get());
  h.buffer = std::move(fresh);
}
}  // namespace

void write_view(StorageHandle& h, const ops::ViewSpec& v, const BufferPtr& value) {
  if (value->type().elem != v.elem || value->type().dims != v.sizes)
    throw std::runtime_error("torch_tpu internal error: write_view value type " + value->type().str() +
                             " does not match the view");
  if (value->device() != h.device) throw std::runtime_error("torch_tpu internal error: write across devices");
  if (covers_whole_storage(h, v)) {
    set_buffer(h, value);
    return;
  }
  ensure_buffer(h, v.elem);
  const TensorType bt = h.buffer->type();
  std::string key = "write|";
  append_type(key, bt);
  append_view(key, v);
  // The new base keeps the buffer's type, or becomes flat in the view's type.
  TensorType out = v.elem == bt.elem
                       ? bt
                       : TensorType{v.elem, {static_cast<int64_t>(h.nbytes / shlo::byte_size(v.elem))}};
  set_buffer(h, run_or_record(key, {h.buffer, value, offset_buffer(v.offset, h.device)}, out, h.device,
                              [v, bt](shlo::Builder& b, const std::vector<Value>& in) {
                                Value r = ops::scatter_view(b, in[0], in[1], v, &in[2]);
                                if (r.type.elem == bt.elem) r = b.reshape(r, bt.dims);
                                return std::vector<Value>{r};
                              }));
}

BufferPtr resized_buffer(StorageHandle& h, size_t new_nbytes) {
  if (!h.buffer) return nullptr;  // still all zeros
  TensorType bt = h.buffer->type();
  int size = shlo::byte_size(bt.elem);
  bool bytewise = new_nbytes % size != 0 || h.nbytes % size != 0;
  ElemType elem = bytewise ? ElemType::U8 : bt.elem;
  int64_t old_count = static_cast<int64_t>(h.nbytes / shlo::byte_size(elem));
  int64_t new_count = static_cast<int64_t>(new_nbytes / shlo::byte_size(elem));
  std::string key = "resize|";
  append_type(key, bt);
  key += std::to_string(new_count);
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    Value base = b.arg(bt);
    Value flat = ops::reinterpret_flat(b, b.reshape(base, {bt.numel()}), elem);
    Value r = new_count >= old_count
                  ? b.pad(flat, b.constant(0, elem), {0}, {new_count - old_count})
                  : b.slice(flat, {0}, {new_count}, {1});
    return BuiltModule{b.module({r}), {r.type}, {}};
  });
  return execute(*op, {h.buffer.get()}, h.device)[0];
}

BufferPtr convert_broadcast(const BufferPtr& value, const TensorType& to, int device) {
  if (value->type() == to) return value;
  std::string key = "convert|";
  append_type(key, value->type());
  append_type(key, to);
  return run_or_record(key, {value}, to, device, [to](shlo::Builder& b, const std::vector<Value>& in) {
    return std::vector<Value>{ops::broadcast_convert(b, in[0], to)};
  });
}

}  // namespace ttpu::runtime
