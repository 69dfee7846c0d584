// Tensor files: .npy and .pb round trips of every dtype (bit-exact), 0-d and empty
// tensors, .npy versions 2.0 and 3.0, numpy-written fixtures, and damaged or unsupported
// files, each an fb::Error naming the file.
#include "harness/cases/tensor_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/ir/error.h"

namespace fs = std::filesystem;
using fb::DType;
using fb::Tensor;

namespace {

class TensorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusebench_test_tensor_file_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// Distinct bytes in every element (bools 0/1): a swapped or shifted element shows.
Tensor patterned(DType t, fb::Shape shape) {
  Tensor x(t, std::move(shape));
  auto* b = static_cast<unsigned char*>(x.raw());
  for (size_t i = 0; i < x.nbytes(); ++i) b[i] = t == DType::Bool ? (i % 3 == 0) : static_cast<unsigned char>(i * 37 + 11);
  return x;
}

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// A .npy file of any version with the given header dict (padded as numpy does) and data.
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  header.append((64 - (6 + 2 + len_bytes + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string r = std::string("\x93NUMPY", 6) + char(major) + '\0';
  for (size_t i = 0; i < len_bytes; ++i) r += char((header.size() >> (8 * i)) & 0xff);
  return r + header + data;
}

// The error a call throws, or "" when it does not.
template <typename F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const fb::Error& e) {
    return e.what();
  }
  return "";
}

const DType kNumpyTypes[] = {DType::Float16, DType::Float32, DType::Float64, DType::Int8,   DType::Int16,  DType::Int32,
                             DType::Int64,   DType::UInt8,   DType::UInt16,  DType::UInt32, DType::UInt64, DType::Bool};

TEST_F(TensorFileTest, NpyRoundTripsEveryNumpyDtypeExactly) {
  for (DType t : kNumpyTypes) {
    SCOPED_TRACE(fb::dtype_name(t));
    const Tensor x = patterned(t, {2, 3, 5});
    fb::write_npy(path("x.npy"), x);
    expect_same(fb::read_tensor_file(path("x.npy")), x);
  }
}

TEST_F(TensorFileTest, PbRoundTripsEveryDtypeExactly) {
  std::vector<DType> types(std::begin(kNumpyTypes), std::end(kNumpyTypes));
  types.push_back(DType::BFloat16);
  for (DType t : types) {
    SCOPED_TRACE(fb::dtype_name(t));
    const Tensor x = patterned(t, {4, 3});
    fb::write_tensor_pb(path("x.pb"), x, "x");
    expect_same(fb::read_tensor_file(path("x.pb")), x);
  }
}

TEST_F(TensorFileTest, ScalarsAndEmptyTensorsRoundTrip) {
  for (const fb::Shape& shape : {fb::Shape{}, fb::Shape{0}, fb::Shape{2, 0, 3}, fb::Shape{1}}) {
    SCOPED_TRACE(fb::shape_str(shape));
    const Tensor x = patterned(DType::Float32, shape);
    fb::write_npy(path("s.npy"), x);
    expect_same(fb::read_tensor_file(path("s.npy")), x);
    fb::write_tensor_pb(path("s.pb"), x, "s");
    expect_same(fb::read_tensor_file(path("s.pb")), x);
  }
}

TEST_F(TensorFileTest, WrittenNpyIsLaidOutAsNumpyDoes) {
  Tensor x(DType::Float32, {2, 3});
  fb::write_npy(path("x.npy"), x);
  const std::string bytes = slurp(path("x.npy"));
  ASSERT_EQ(bytes.size(), 128u + 24u);  // header padded to a multiple of 64 bytes, then 6 floats
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(bytes[127], '\n');
  fb::write_npy(path("v.npy"), Tensor(DType::Int8, {7}));
  EXPECT_NE(slurp(path("v.npy")).find("'descr': '|i1', 'fortran_order': False, 'shape': (7,), }"), std::string::npos);
}

TEST_F(TensorFileTest, ReadsNpyVersions2And3) {
  const std::string data("\x01\x00\x02\x00\x03\x00", 6);
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    spit(path("v.npy"), npy_bytes(major, "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", data));
    const Tensor t = fb::read_tensor_file(path("v.npy"));
    ASSERT_EQ(t.dtype(), DType::Int16);
    EXPECT_EQ(t.shape(), fb::Shape{3});
    EXPECT_EQ(std::vector<int16_t>(t.data<int16_t>(), t.data<int16_t>() + 3), (std::vector<int16_t>{1, 2, 3}));
  }
  // Key order and quoting are numpy's business, not ours.
  spit(path("q.npy"), npy_bytes(1, "{\"shape\": (1, 1), \"fortran_order\": False, \"descr\": \"<f8\"}", std::string(8, '\0')));
  EXPECT_EQ(fb::read_tensor_file(path("q.npy")).shape(), (fb::Shape{1, 1}));
}

TEST_F(TensorFileTest, NumpyWrittenFixturesReadAndRewriteIdentically) {
  const fs::path fixtures = fs::path(FUSEBENCH_SOURCE_DIR) / "tests/data/npy";
  // Values chosen in tests/data/npy/make_fixtures.py.
  const Tensor f = fb::read_tensor_file((fixtures / "f4_2x3.npy").string());
  ASSERT_EQ(f.dtype(), DType::Float32);
  ASSERT_EQ(f.shape(), (fb::Shape{2, 3}));
  const std::vector<float> expected_f{0.5f, -1.25f, 3.0f, 1e-3f, -0.0f, 65504.0f};
  for (size_t i = 0; i < expected_f.size(); ++i) EXPECT_EQ(f.data<float>()[i], expected_f[i]) << i;

  const Tensor i8 = fb::read_tensor_file((fixtures / "i8_4.npy").string());
  EXPECT_EQ(i8.dtype(), DType::Int64);
  EXPECT_EQ(i8.as_int64_vector(), (std::vector<int64_t>{-3, 0, 7, int64_t(1) << 40}));

  const Tensor b = fb::read_tensor_file((fixtures / "b1_3.npy").string());
  ASSERT_EQ(b.dtype(), DType::Bool);
  EXPECT_EQ(std::vector<bool>(b.data<bool>(), b.data<bool>() + 3), (std::vector<bool>{true, false, true}));

  const Tensor h = fb::read_tensor_file((fixtures / "f2_scalar.npy").string());
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_TRUE(h.shape().empty());
  EXPECT_EQ(*static_cast<const uint16_t*>(h.raw()), 0x3e00);  // 1.5 in IEEE half

  const Tensor e = fb::read_tensor_file((fixtures / "u2_0x2.npy").string());
  EXPECT_EQ(e.dtype(), DType::UInt16);
  EXPECT_EQ(e.shape(), (fb::Shape{0, 2}));

  // What we write is byte for byte what numpy wrote.
  for (const char* name : {"f4_2x3.npy", "i8_4.npy", "b1_3.npy", "f2_scalar.npy", "u2_0x2.npy"}) {
    SCOPED_TRACE(name);
    fb::write_npy(path(name), fb::read_tensor_file((fixtures / name).string()));
    EXPECT_EQ(slurp(path(name)), slurp((fixtures / name).string()));
  }
}

TEST_F(TensorFileTest, DamagedNpyFilesAreErrorsNamingTheFile) {
  fb::write_npy(path("good.npy"), patterned(DType::Float32, {4, 4}));
  const std::string good = slurp(path("good.npy"));

  spit(path("short.npy"), good.substr(0, 5));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("short.npy")); }).find("short.npy: too short"), std::string::npos);

  spit(path("header.npy"), good.substr(0, 30));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("header.npy")); }).find("header.npy: .npy header claims"), std::string::npos);

  spit(path("data.npy"), good.substr(0, good.size() - 1));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("data.npy")); }).find("data.npy: holds 63 bytes of data, expected 64"),
            std::string::npos);

  spit(path("long.npy"), good + "x");
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("long.npy")); }).find("holds 65 bytes of data, expected 64"), std::string::npos);

  std::string magic = good;
  magic[1] = 'X';
  spit(path("magic.npy"), magic);
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("magic.npy")); }).find("magic.npy: not a .npy file"), std::string::npos);

  std::string version = good;
  version[6] = 4;
  spit(path("version.npy"), version);
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("version.npy")); }).find("unsupported .npy format version 4.0"),
            std::string::npos);

  // A header that claims a huge shape is refused before anything is allocated.
  spit(path("huge.npy"), npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", ""));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("huge.npy")); }).find("expected 4000000000000000000"), std::string::npos);
  spit(path("overflow.npy"),
       npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000000, 1000000000000000), }", ""));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("overflow.npy")); }).find("is too large"), std::string::npos);

  spit(path("garbled.npy"), npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "abcd"));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("garbled.npy")); }).find("garbled.npy: malformed .npy header"),
            std::string::npos);
  spit(path("nokey.npy"), npy_bytes(1, "{'descr': '<f4', 'shape': (1,), }", "abcd"));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("nokey.npy")); }).find("needs the keys"), std::string::npos);
}

TEST_F(TensorFileTest, UnsupportedNpyLayoutsAreClearErrors) {
  spit(path("fortran.npy"), npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0')));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("fortran.npy")); }).find("fortran.npy: fortran_order arrays are not supported"),
            std::string::npos);

  spit(path("big.npy"), npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("big.npy")); }).find("big.npy: big-endian data ('>f4')"), std::string::npos);

  spit(path("complex.npy"), npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("complex.npy")); }).find("unsupported .npy dtype '<c8'"), std::string::npos);

  spit(path("struct.npy"), npy_bytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "abcd"));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("struct.npy")); }).find("structured dtypes are not supported"),
            std::string::npos);

  EXPECT_NE(error_of([&] { fb::write_npy(path("bf.npy"), Tensor(DType::BFloat16, {2})); }).find("bfloat16 has no numpy dtype"),
            std::string::npos);
}

TEST_F(TensorFileTest, DamagedOrUnknownFilesAreErrors) {
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("missing.npy")); }).find("missing.npy: no such file"), std::string::npos);
  spit(path("x.txt"), "1 2 3");
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("x.txt")); }).find("x.txt: unknown tensor file type '.txt'"),
            std::string::npos);

  fb::write_tensor_pb(path("good.pb"), patterned(DType::Float32, {8}), "t");
  const std::string good = slurp(path("good.pb"));
  spit(path("cut.pb"), good.substr(0, good.size() - 5));
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("cut.pb")); }).find("cut.pb: not an ONNX TensorProto"), std::string::npos);
  spit(path("junk.pb"), "\xff\xff\xff\xff garbage");
  EXPECT_NE(error_of([&] { fb::read_tensor_file(path("junk.pb")); }).find("junk.pb: "), std::string::npos);
}

}  // namespace
