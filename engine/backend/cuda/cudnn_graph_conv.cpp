#include "engine/backend/cuda/cudnn_graph_conv.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "engine/backend/cuda/algorithm_timing.h"

namespace fb::cuda {

namespace {

// The address's alignment in bytes, up to 16 (what cuDNN's vectorized engines ask about).
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 16;
  while (align > 1 && a % uintptr_t(align) != 0) align /= 2;
  return align;
}

}  // namespace

// The descriptors below are built in the backend API's C form; each step that cuDNN refuses
// ends the attempt with its status named, and the caller keeps the legacy API.
std::unique_ptr<CudnnGraphConv> CudnnGraphConv::make(const CudaContext& ctx, const GraphConvSpec& s, const void* x,
                                                     const void* w, void* y, PlanChoice choice, std::string& why) {
  std::unique_ptr<CudnnGraphConv> c(new CudnnGraphConv(ctx));
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  const char* step = "";
  auto ok = [&](cudnnStatus_t st, const char* what) {
    if (status == CUDNN_STATUS_SUCCESS && st != CUDNN_STATUS_SUCCESS) status = st, step = what;
    return status == CUDNN_STATUS_SUCCESS;
  };
  auto made = [&](cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    if (ok(cudnnBackendCreateDescriptor(type, &d), "create a descriptor")) c->owned_.push_back(d);
    return d;
  };
  auto set = [&](cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                 int64_t count, const void* value) { ok(cudnnBackendSetAttribute(d, name, type, count, value), "set an attribute"); };
  auto tensor = [&](int64_t uid, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, const void* data) {
    cudnnBackendDescriptor_t t = made(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t align = alignment_of(data);
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &s.type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, int64_t(dims.size()), dims.data());
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, int64_t(strides.size()), strides.data());
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    ok(cudnnBackendFinalize(t), "finalize a tensor");
    return t;
  };
  const int64_t kX = 1, kW = 2, kY = 3;
  cudnnBackendDescriptor_t xt = tensor(kX, s.x_dims, s.x_strides, x), wt = tensor(kW, s.w_dims, s.w_strides, w),
                           yt = tensor(kY, s.y_dims, s.y_strides, y);

  cudnnBackendDescriptor_t conv = made(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = int64_t(s.pad.size());
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, s.dilation.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, s.stride.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, s.pad.data());
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, s.pad.data());
  ok(cudnnBackendFinalize(conv), "finalize the convolution");

  cudnnBackendDescriptor_t op = made(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.f, beta = s.beta;
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &xt);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &wt);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &yt);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  ok(cudnnBackendFinalize(op), "finalize the operation");

  // The handle names the device the heuristic plans for (cuDNN 9 marks the attribute
  // deprecated in favour of a device-property descriptor that older 9.x releases lack).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const cudnnBackendAttributeName_t graph_handle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                    plan_handle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop
  cudnnBackendDescriptor_t graph = made(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
  set(graph, graph_handle, CUDNN_TYPE_HANDLE, 1, &ctx.cudnn);
  ok(cudnnBackendFinalize(graph), "finalize the operation graph");

  cudnnBackendDescriptor_t heur = made(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_INSTANT;
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode);
  ok(cudnnBackendFinalize(heur), "finalize the heuristic");
  int64_t listed = 0;
  ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &listed, nullptr),
     "count the heuristic's engine configs");
  std::vector<cudnnBackendDescriptor_t> configs;
  for (int64_t i = 0; i < listed; ++i) configs.push_back(made(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  if (!configs.empty())
    ok(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, listed, &listed,
                                configs.data()),
       "read the heuristic's engine configs");
  if (status != CUDNN_STATUS_SUCCESS) {
    why = std::string("cuDNN's graph API refused to ") + step + ": " + cudnnGetErrorString(status);
    return nullptr;
  }

  cudnnBackendDescriptor_t pack = made(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void* pointers[] = {const_cast<void*>(x), const_cast<void*>(w), y};
  const int64_t uids[] = {kX, kW, kY};
  void* workspace = ctx.workspace;
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  ok(cudnnBackendFinalize(pack), "finalize the variant pack");
  if (status != CUDNN_STATUS_SUCCESS) {
    why = std::string("cuDNN's graph API refused to ") + step + ": " + cudnnGetErrorString(status);
    return nullptr;
  }
  c->pack_ = pack;

  // The heuristic's configs in its order, as PyTorch tries them: a timed build's choice for
  // this convolution is remembered by its place in that list (the same graph lists the same).
  static std::mutex mutex;
  static std::map<std::string, int64_t> chosen;
  std::lock_guard<std::mutex> lock(mutex);
  const bool timing = choice != PlanChoice::HeuristicFirst;
  std::string key = std::to_string(ctx.device) + (choice == PlanChoice::TimedInGraph ? " graph" : " eager");
  for (const std::vector<int64_t>* v : {&s.x_dims, &s.x_strides, &s.w_dims, &s.w_strides, &s.y_dims, &s.y_strides, &s.pad,
                                        &s.stride, &s.dilation})
    for (int64_t d : *v) key += " " + std::to_string(d);
  key += " " + std::to_string(int(s.type)) + " " + std::to_string(int(s.fma_only)) + " " + std::to_string(s.beta) + " " +
         std::to_string(alignment_of(x)) + " " + std::to_string(alignment_of(w)) + " " + std::to_string(alignment_of(y));
  const auto remembered = timing ? chosen.find(key) : chosen.end();
  struct Usable {
    cudnnBackendDescriptor_t plan;
    int64_t index, engine;
  };
  std::vector<Usable> usable;
  int refused = 0;
  for (int64_t i = 0; i < listed && usable.size() < size_t(timing ? kTimedPlans : 1); ++i) {
    if (remembered != chosen.end() && remembered->second != i) continue;
    cudnnBackendDescriptor_t engine = made(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t got = 0, index = -1, note_count = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (!engine ||
        cudnnBackendGetAttribute(configs[size_t(i)], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                 &engine) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &note_count, notes) != CUDNN_STATUS_SUCCESS) {
      ++refused;
      continue;
    }
    cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &index);
    const bool reduced = std::any_of(notes, notes + note_count, [](cudnnBackendNumericalNote_t n) {
      return n == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || n == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
    });
    if (s.fma_only && reduced) continue;
    cudnnBackendDescriptor_t plan = made(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    int64_t workspace_size = 0;
    if (!plan || cudnnBackendSetAttribute(plan, plan_handle, CUDNN_TYPE_HANDLE, 1, &ctx.cudnn) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                 &configs[size_t(i)]) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                                 &workspace_size) != CUDNN_STATUS_SUCCESS ||
        workspace_size < 0 || size_t(workspace_size) > ctx.workspace_bytes) {
      ++refused;
      continue;
    }
    usable.push_back({plan, i, index});
  }
  if (usable.empty()) {
    why = "cuDNN's instant heuristic listed " + std::to_string(listed) + " engine configs, none usable here (" +
          std::to_string(refused) + " failed to finalize or exceed the " + std::to_string(ctx.workspace_bytes) +
          "-byte workspace)";
    return nullptr;
  }
  size_t best = 0;
  if (timing && remembered == chosen.end()) {
    double best_ms = -1;
    for (size_t u = 0; u < usable.size(); ++u) {
      auto call = [&] { return cudnnBackendExecute(ctx.cudnn, usable[u].plan, pack) == CUDNN_STATUS_SUCCESS; };
      const double ms = choice == PlanChoice::TimedInGraph ? graph_replay_ms(ctx.stream, call) : eager_ms(ctx.stream, call);
      if (ms >= 0 && (best_ms < 0 || ms < best_ms)) best_ms = ms, best = u;
    }
    if (best_ms >= 0) chosen[key] = usable[best].index;
  }
  for (size_t u = 0; u < usable.size(); ++u) {  // the plans not chosen go now
    if (u == best) continue;
    cudnnBackendDestroyDescriptor(usable[u].plan);
    c->owned_.erase(std::find(c->owned_.begin(), c->owned_.end(), usable[u].plan));
  }
  c->plan_ = usable[best].plan;
  c->engine_ = usable[best].engine;
  c->timed_ = timing && chosen.count(key) != 0;
  return c;
}

CudnnGraphConv::~CudnnGraphConv() {
  for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
}

void CudnnGraphConv::run() const { FB_CUDA(cudnnBackendExecute(ctx_.cudnn, plan_, pack_)); }

}  // namespace fb::cuda
