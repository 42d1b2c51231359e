#include "runtime/transports/mpi/mpi_session.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "common/logging.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

std::mutex g_mu;
MpiSession* g_session = nullptr;  // set once, never freed (MPI lives until exit)
Status g_failure;                 // a failed start is not retried (MPI_Init is once only)
bool g_we_initialized = false;

void FinalizeAtExit() {
  // Not after a collective was abandoned: finalizing progresses it (MpiSession::Abandon).
  if (g_session != nullptr && g_session->abandoned()) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// libhvd is dlopen'ed RTLD_LOCAL by the Python binding; Open MPI's plugins resolve libmpi's
// symbols globally, so promote the already-loaded libmpi before MPI_Init (Horovod does the same).
void PromoteLibmpiToGlobal() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) == 0 || !info.dli_fname) return;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) == nullptr) {
    HVD_LOG_DEBUG("cannot promote {} to RTLD_GLOBAL: {}", info.dli_fname, dlerror());
  }
}

// The session whose session-defined types the user ops below decode; set before any op exists.
const MpiSession* g_types = nullptr;

DataType DecodeType(MPI_Datatype type) {
  if (type == g_types->Type(DataType::kFloat16)) return DataType::kFloat16;
  if (type == g_types->Type(DataType::kBFloat16)) return DataType::kBFloat16;
  return DataType::kBool;
}

// MPI user functions: inout[i] = op(inout[i], in[i]) with runtime/reduction.h's kernels.
template <ReduceOp kOp>
void UserReduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  ReduceInto(inout, in, *len, DecodeType(*type), kOp);
}

}  // namespace

Status MpiError(int code, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return Status::RemoteError(what + ": MPI error " + std::to_string(code) +
                             (length > 0 ? " (" + std::string(text, length) + ")" : ""));
}

Result<MpiSession*> MpiSession::Acquire(bool threads_disabled) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_session != nullptr) {
    HVD_RETURN_IF_ERROR(g_session->Usable("starting hvd on MPI again"));
    return g_session;
  }
  if (!g_failure.ok()) return g_failure;
  auto* session = new MpiSession();
  Status s = session->Start(threads_disabled);
  if (!s.ok()) {
    g_failure = s;
    return s;
  }
  g_session = session;
  return g_session;
}

Status MpiSession::Start(bool threads_disabled) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return Status::PreconditionFailed("MPI was already finalized in this process");
  const int wanted = threads_disabled ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE;
  if (!initialized) {
    PromoteLibmpiToGlobal();
    int rc = MPI_Init_thread(nullptr, nullptr, wanted, &thread_level_);
    if (rc != MPI_SUCCESS) return MpiError(rc, "MPI_Init_thread");
    g_we_initialized = true;
    std::atexit(FinalizeAtExit);
  } else {
    MPI_Query_thread(&thread_level_);
  }
  // The runtime calls MPI from the thread running hvd_init and then from its background thread,
  // never concurrently: SERIALIZED is enough; less works with Open MPI in practice.
  if (thread_level_ < MPI_THREAD_SERIALIZED && !threads_disabled) {
    HVD_LOG_WARNING("MPI provides thread level {} only (wanted MPI_THREAD_MULTIPLE)",
                    thread_level_);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int version_length = 0;
  if (MPI_Get_library_version(version, &version_length) == MPI_SUCCESS) {
    library_version_.assign(version, static_cast<size_t>(std::max(0, version_length)));
    library_version_ = library_version_.substr(0, library_version_.find_first_of("\n,"));
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  for (auto [type, base] :
       {std::pair{&half_, MPI_UINT16_T}, {&bfloat16_, MPI_UINT16_T}, {&bool_, MPI_UINT8_T}}) {
    int rc = MPI_Type_contiguous(1, base, type);
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(type);
    if (rc != MPI_SUCCESS) return MpiError(rc, "creating the MPI datatypes");
  }
  g_types = this;
  for (auto [op, fn] : {std::pair{&sum_, &UserReduce<ReduceOp::kSum>},
                        {&min_, &UserReduce<ReduceOp::kMin>},
                        {&max_, &UserReduce<ReduceOp::kMax>},
                        {&product_, &UserReduce<ReduceOp::kProduct>}}) {
    int rc = MPI_Op_create(fn, /*commute=*/1, op);
    if (rc != MPI_SUCCESS) return MpiError(rc, "creating the MPI reduction ops");
  }
  HVD_LOG_DEBUG("MPI {} by hvd: rank {} of {}, thread level {}",
                g_we_initialized ? "initialized" : "already initialized", world_rank_, world_size_,
                thread_level_);
  return Status::OK();
}

void MpiSession::Abandon(const Status& why) {
  std::lock_guard<std::mutex> lock(abandon_mu_);
  if (abandoned_.exchange(true)) return;
  abandoned_why_ = why;
  HVD_LOG_ERROR(
      "{}; the collective stays pending in MPI, so this process makes no MPI call "
      "again (not even MPI_Finalize at exit)",
      why.message());
}

Status MpiSession::Usable(const std::string& what) const {
  if (!abandoned_.load()) return Status::OK();
  std::lock_guard<std::mutex> lock(abandon_mu_);
  return Status::PreconditionFailed(
      what + ": MPI cannot be used again in this process: a collective was left pending (" +
      abandoned_why_.message() +
      ") and any MPI call could finish it into memory freed since; restart the job");
}

MPI_Datatype MpiSession::Type(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8:
      return MPI_UINT8_T;
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kUInt16:
      return MPI_UINT16_T;
    case DataType::kInt16:
      return MPI_INT16_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kFloat16:
      return half_;
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kBool:
      return bool_;
    case DataType::kBFloat16:
      return bfloat16_;
  }
  return MPI_DATATYPE_NULL;
}

Result<MPI_Op> MpiSession::Op(DataType dtype, ReduceOp op) const {
  const bool custom =
      dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 || dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::kSum:
      return custom ? sum_ : MPI_SUM;
    case ReduceOp::kMin:
      return custom ? min_ : MPI_MIN;
    case ReduceOp::kMax:
      return custom ? max_ : MPI_MAX;
    case ReduceOp::kProduct:
      return custom ? product_ : MPI_PROD;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum:
      break;
  }
  return Status::InvalidArgument(std::string("MPI has no elementwise ") + ReduceOpName(op) +
                                 " (Average is Sum then a scale; Adasum is not elementwise)");
}

}  // namespace hvd::runtime
