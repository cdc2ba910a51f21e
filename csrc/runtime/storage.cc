#include "runtime/storage.h"

#include <stdexcept>

namespace ttpu::runtime {

namespace {

void append_type(std::string& key, const TensorType& t) {
  key += shlo::mlir_name(t.elem);
  for (auto d : t.dims) {
    key += ',';
    key += std::to_string(d);
  }
  key += ';';
}

void append_view(std::string& key, const ops::ViewSpec& v) {
  key += shlo::mlir_name(v.elem);
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
  return upload(&offset, TensorType{ElemType::S64, {}}, device);
}

}  // namespace

BufferPtr zeros(const TensorType& type, int device) {
  std::string key = "zeros|";
  append_type(key, type);
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    Value z = b.constant(0, type.elem, type.dims);
    return BuiltModule{b.module({z}), {type}, {}};
  });
  return execute(*op, {}, device)[0];
}

BufferPtr read_view(StorageHandle& h, const ops::ViewSpec& v) {
  ensure_buffer(h, v.elem);
  const TensorType& bt = h.buffer->type();
  if (bt.elem == v.elem && v.offset == 0 && bt.dims == v.sizes && ops::is_contiguous(v.sizes, v.strides))
    return h.buffer;
  std::string key = "read|";
  append_type(key, bt);
  append_view(key, v);
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    Value base = b.arg(bt);
    Value offset = b.arg(TensorType{ElemType::S64, {}});
    Value r = ops::gather_view(b, base, v, &offset);
    return BuiltModule{b.module({r}), {r.type}, {}};
  });
  BufferPtr offset = offset_buffer(v.offset, h.device);
  return execute(*op, {h.buffer.get(), offset.get()}, h.device)[0];
}

void write_view(StorageHandle& h, const ops::ViewSpec& v, const BufferPtr& value) {
  if (value->type().elem != v.elem || value->type().dims != v.sizes)
    throw std::runtime_error("torch_tpu internal error: write_view value type " + value->type().str() +
                             " does not match the view");
  if (value->device() != h.device) throw std::runtime_error("torch_tpu internal error: write across devices");
  if (covers_whole_storage(h, v)) {
    h.buffer = value;
    return;
  }
  ensure_buffer(h, v.elem);
  const TensorType bt = h.buffer->type();
  std::string key = "write|";
  append_type(key, bt);
  append_view(key, v);
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    Value base = b.arg(bt);
    Value val = b.arg(value->type());
    Value offset = b.arg(TensorType{ElemType::S64, {}});
    Value r = ops::scatter_view(b, base, val, v, &offset);
    if (r.type.elem == bt.elem) r = b.reshape(r, bt.dims);
    return BuiltModule{b.module({r}), {r.type}, {}};
  });
  BufferPtr offset = offset_buffer(v.offset, h.device);
  h.buffer = execute(*op, {h.buffer.get(), value.get(), offset.get()}, h.device)[0];
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
  auto op = get_or_compile(key, [&] {
    shlo::Builder b;
    Value x = b.arg(value->type());
    Value r = ops::broadcast_convert(b, x, to);
    return BuiltModule{b.module({r}), {to}, {}};
  });
  return execute(*op, {value.get()}, device)[0];
}

}  // namespace ttpu::runtime
