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

// The storage executables go through the executor like every op: run now
// (Strict/Debug) or recorded into the pending graph (DeferAndFuse).
BufferPtr submit_op(const std::string& key, const std::vector<BufferPtr>& inputs, const TensorType& out,
                        int device, const EmitFn& emit) {
  const std::vector<TensorType> outs{out};
  return submit({device, nullptr, key, inputs, outs, emit})[0];
}

}  // namespace

BufferPtr zeros(const TensorType& type, int device) {
  std::string key = "zeros|";
  append_type(key, type);
  return submit_op(key, {}, type, device, [type](shlo::Builder& b, const std::vector<Value>&) {
    return std::vector<Value>{b.constant(0, type.elem, type.dims)};
  });
}

bool is_whole_buffer(const StorageHandle& h, const ops::ViewSpec& v) {
  if (!h.buffer) return false;
  const TensorType& bt = h.buffer->type();
  return bt.elem == v.elem && v.offset == 0 && bt.dims == v.sizes && ops::is_contiguous(v.sizes, v.strides);
}

BufferPtr read_view(StorageHandle& h, const ops::ViewSpec& v) {
  ensure_buffer(h, v.elem);
  if (is_whole_buffer(h, v)) return h.buffer;
  const TensorType& bt = h.buffer->type();
  std::string key = "read|";
  append_type(key, bt);
  append_view(key, v);
  TensorType out{v.elem, v.sizes};
  return submit_op(key, {h.buffer, offset_buffer(v.offset, h.device)}, out, h.device,
                       [v](shlo::Builder& b, const std::vector<Value>& in) {
                         return std::vector<Value>{ops::gather_view(b, in[0], v, &in[1])};
                       });
}

void view_operand(StorageHandle& h, const ops::ViewSpec& v, std::vector<BufferPtr>& inputs, std::string& key) {
  ensure_buffer(h, v.elem);
  key += 'v';
  append_type(key, h.buffer->type());
  append_view(key, v);
  inputs.push_back(h.buffer);
  inputs.push_back(offset_buffer(v.offset, h.device));
}

namespace {
// A pending value that becomes the storage's buffer remembers which concrete
// buffer it replaces (through a chain of pending in-place updates).
void set_buffer(StorageHandle& h, BufferPtr fresh) {
  PendingValue* p = pending(fresh.get());
  if (p && h.buffer && h.buffer != fresh) {
    const PendingValue* old = pending(h.buffer.get());
    p->set_replaces(old && old->replaces() ? old->replaces() : h.buffer.get());
  }
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
  set_buffer(h, submit_op(key, {h.buffer, value, offset_buffer(v.offset, h.device)}, out, h.device,
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
  return submit_op(key, {h.buffer}, TensorType{elem, {new_count}}, h.device,
                       [bt, elem, old_count, new_count](shlo::Builder& b, const std::vector<Value>& in) {
                         Value flat = ops::reinterpret_flat(b, b.reshape(in[0], {bt.numel()}), elem);
                         return std::vector<Value>{new_count >= old_count
                                                       ? b.pad(flat, b.constant(0, elem), {0}, {new_count - old_count})
                                                       : b.slice(flat, {0}, {new_count}, {1})};
                       });
}

BufferPtr convert_broadcast(const BufferPtr& value, const TensorType& to, int device) {
  if (value->type() == to) return value;
  std::string key = "convert|";
  append_type(key, value->type());
  append_type(key, to);
  return submit_op(key, {value}, to, device, [to](shlo::Builder& b, const std::vector<Value>& in) {
    return std::vector<Value>{ops::broadcast_convert(b, in[0], to)};
  });
}

}  // namespace ttpu::runtime
