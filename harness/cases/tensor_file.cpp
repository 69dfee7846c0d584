#include "harness/cases/tensor_file.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "engine/onnx/onnx_import.h"

namespace fb {

namespace fs = std::filesystem;

// Tensor data is written and read as raw bytes, which .npy ('<') and TensorProto
// raw_data define as little-endian.
static_assert(std::endian::native == std::endian::little, "tensor files assume a little-endian host");

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicLen = 6;

uint64_t file_size_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error(path + ": no such file");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read its size: " + ec.message());
  return size;
}

std::ifstream open_for_reading(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open for reading");
  return in;
}

void read_exactly(std::ifstream& in, void* dst, size_t n, const std::string& path, const char* what) {
  if (n == 0) return;
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in.gcount()) != n) throw Error(path + ": file ends inside the " + std::string(what));
}

// ---- .npy header: a Python dict literal with 'descr', 'fortran_order' and 'shape' ----

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (peek() == '[') fail("structured dtypes are not supported");
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++i_;
    }
    if (!have_descr || !have_order || !have_shape) fail("it needs the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(path_ + ": malformed .npy header (" + why + "): " + s_.substr(0, 200));
  }
  char peek() const {
    if (i_ >= s_.size()) fail("it ends early");
    return s_[i_];
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const size_t end = s_.find(quote, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string r = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return r;
  }
  bool parse_bool() {
    for (const char* word : {"True", "False"}) {
      const size_t n = std::strlen(word);
      if (s_.compare(i_, n, word) == 0) {
        i_ += n;
        return word[0] == 'T';
      }
    }
    fail("expected True or False");
  }
  Shape parse_shape() {
    expect('(');
    Shape shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("shape entries must be non-negative integers");
      int64_t d = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (d > (int64_t(1) << 50)) fail("a dimension is too large");
        d = d * 10 + (s_[i_++] - '0');
      }
      shape.push_back(d);
      skip_space();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++i_;
    return shape;
  }

  const std::string& s_;
  const std::string& path_;
  size_t i_ = 0;
};

// numpy's type code ("<f4", "|b1") for a dtype; nullopt where numpy has none.
std::optional<std::string> npy_descr(DType t) {
  switch (t) {
    case DType::Float16: return "<f2";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    default: return std::nullopt;
  }
}

DType dtype_from_descr(const std::string& descr, const std::string& path) {
  if (descr.size() < 3) throw Error(path + ": unsupported .npy dtype '" + descr + "'");
  const char order = descr[0];
  const std::string code = descr.substr(1);
  const bool single_byte = code == "i1" || code == "u1" || code == "b1";
  if (order == '>' && !single_byte)
    throw Error(path + ": big-endian data ('" + descr + "') is not supported; save it little-endian (numpy: a.astype(a.dtype.newbyteorder('<')))");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    throw Error(path + ": unsupported .npy dtype '" + descr + "'");
  for (DType t : {DType::Float16, DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32, DType::Int64,
                  DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64, DType::Bool})
    if (npy_descr(t)->substr(1) == code) return t;
  throw Error(path + ": unsupported .npy dtype '" + descr + "' (fusebench reads f2 f4 f8, i1..i8, u1..u8 and b1)");
}

// Element count × element size, or an Error when it cannot be a real tensor's size.
uint64_t checked_nbytes(const Shape& shape, DType t, const std::string& path) {
  uint64_t n = dtype_size(t);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      throw Error(path + ": shape " + shape_str(shape) + " is too large");
  return n;
}

Tensor read_npy(const std::string& path) {
  const uint64_t file_size = file_size_of(path);
  std::ifstream in = open_for_reading(path);
  unsigned char prefix[kNpyMagicLen + 2];
  if (file_size < sizeof prefix) throw Error(path + ": too short to be a .npy file (" + std::to_string(file_size) + " bytes)");
  read_exactly(in, prefix, sizeof prefix, path, ".npy header");
  if (std::memcmp(prefix, kNpyMagic, kNpyMagicLen) != 0) throw Error(path + ": not a .npy file (wrong magic bytes)");
  const int major = prefix[kNpyMagicLen], minor = prefix[kNpyMagicLen + 1];
  if (major < 1 || major > 3 || minor != 0)
    throw Error(path + ": unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (fusebench reads 1.0, 2.0 and 3.0)");
  // 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (UTF-8 header) in 4.
  const size_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_le[4] = {0, 0, 0, 0};
  read_exactly(in, len_le, len_bytes, path, ".npy header");
  const uint64_t header_len = uint64_t(len_le[0]) | uint64_t(len_le[1]) << 8 | uint64_t(len_le[2]) << 16 | uint64_t(len_le[3]) << 24;
  const uint64_t data_offset = sizeof prefix + len_bytes + header_len;
  if (data_offset > file_size)
    throw Error(path + ": .npy header claims " + std::to_string(header_len) + " bytes but the file has only " +
                std::to_string(file_size) + " in all");
  std::string text(header_len, '\0');
  read_exactly(in, text.data(), header_len, path, ".npy header");
  const NpyHeader h = HeaderParser(text, path).parse();
  if (h.fortran_order)
    throw Error(path + ": fortran_order arrays are not supported; save a C-ordered array (numpy: np.ascontiguousarray(a))");
  const DType dtype = dtype_from_descr(h.descr, path);
  const uint64_t nbytes = checked_nbytes(h.shape, dtype, path);
  if (file_size - data_offset != nbytes)
    throw Error(path + ": holds " + std::to_string(file_size - data_offset) + " bytes of data, expected " +
                std::to_string(nbytes) + " for " + dtype_name(dtype) + shape_str(h.shape));
  Tensor t = Tensor::empty(dtype, h.shape);
  read_exactly(in, t.raw(), nbytes, path, "data");
  if (dtype == DType::Bool) {
    // numpy writes 0 and 1; any other byte would be an invalid C++ bool.
    auto* b = static_cast<unsigned char*>(t.raw());
    for (uint64_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
  }
  return t;
}

std::string npy_shape_literal(const Shape& shape) {
  std::string r = "(";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) r += ",";  // Python's one-element tuple
  return r + ")";
}

Tensor read_tensor_pb(const std::string& path) {
  const uint64_t file_size = file_size_of(path);
  std::ifstream in = open_for_reading(path);
  std::string bytes(file_size, '\0');
  read_exactly(in, bytes.data(), file_size, path, "TensorProto");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) throw Error(path + ": not an ONNX TensorProto (damaged, another format, or a sequence or optional value: those are not supported)");
  try {
    return tensor_from_proto(proto, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

void write_file(const std::string& path, const std::string& head, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot open for writing");
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  if (n) out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  out.close();
  if (!out) throw Error(path + ": write failed");
}

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

}  // namespace

Tensor read_tensor_file(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return read_tensor_pb(path);
  throw Error(path + ": unknown tensor file type '" + ext + "' (expected .npy or .pb)");
}

void write_npy(const std::string& path, const Tensor& t) {
  const std::optional<std::string> descr = npy_descr(t.dtype());
  if (!descr)
    throw Error(path + ": " + dtype_name(t.dtype()) + " has no numpy dtype, so it cannot be written as .npy (write .pb instead)");
  // Laid out byte for byte as numpy.save does (numpy/lib/format.py): room for the first
  // dimension to grow to 21 digits, then spaces and a newline up to a 64-byte boundary
  // (a full 64 when already aligned).
  std::string dict = "{'descr': '" + *descr + "', 'fortran_order': False, 'shape': " + npy_shape_literal(t.shape()) + ", }";
  if (!t.shape().empty()) dict.append(21 - std::to_string(t.shape()[0]).size(), ' ');
  auto padded_header = [&](size_t len_bytes) {
    std::string h = dict;
    const size_t unpadded = kNpyMagicLen + 2 + len_bytes + h.size() + 1;
    h.append(64 - unpadded % 64, ' ');
    return h + "\n";
  };
  std::string header = padded_header(2);
  const bool v1 = header.size() <= 0xffff;
  if (!v1) header = padded_header(4);
  std::string head(kNpyMagic, kNpyMagicLen);
  head += static_cast<char>(v1 ? 1 : 2);
  head += '\0';
  const uint64_t len = header.size();
  for (size_t i = 0; i < (v1 ? 2u : 4u); ++i) head += static_cast<char>((len >> (8 * i)) & 0xff);
  write_file(path, head + header, t.raw(), t.nbytes());
}

void write_tensor_pb(const std::string& path, const Tensor& t, const std::string& name) {
  if (dtype_size(t.dtype()) == 0) throw Error(path + ": cannot write a tensor of type " + dtype_name(t.dtype()));
  write_file(path, tensor_to_proto(t, name).SerializeAsString(), nullptr, 0);
}

std::string npy_file_name(const std::string& tensor, std::set<std::string>& taken) {
  std::string stem = tensor;
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  std::string name = stem + ".npy";
  for (int k = 2; !taken.insert(name).second; ++k) name = stem + "_" + std::to_string(k) + ".npy";
  return name;
}

}  // namespace fb
