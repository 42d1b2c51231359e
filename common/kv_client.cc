#include "common/kv_client.h"

#include "common/tcp_kv_client.h"

namespace hvd::control {

Result<std::unique_ptr<KvClient>> KvClient::Connect(const std::string& host, uint16_t port,
                                                    const JobKey& key, const std::string& job_id,
                                                    std::chrono::milliseconds timeout) {
  HVD_ASSIGN_OR_RETURN(auto client, TcpKvClient::Connect(host, port, key, job_id, timeout));
  return std::unique_ptr<KvClient>(std::move(client));
}

}  // namespace hvd::control
