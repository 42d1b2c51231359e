#include "common/elastic_messages.h"

#include <charconv>
#include <vector>

namespace hvd::control::elastic {
namespace {

std::vector<std::string_view> Words(std::string_view text, size_t max_words) {
  std::vector<std::string_view> words;
  while (!text.empty() && words.size() + 1 < max_words) {
    size_t space = text.find(' ');
    words.push_back(text.substr(0, space));
    if (space == std::string_view::npos) return words;
    text.remove_prefix(space + 1);
  }
  if (!text.empty()) words.push_back(text);
  return words;
}

template <typename T>
bool Number(std::string_view word, T* out) {
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), *out);
  return ec == std::errc() && end == word.data() + word.size();
}

Status Malformed(std::string_view what, std::string_view text) {
  return Status::InvalidArgument("malformed elastic " + std::string(what) + " '" +
                                 std::string(text) + "'");
}

}  // namespace

std::string MailKey(int64_t worker, int64_t n) {
  return "elastic/mail/" + std::to_string(worker) + "/" + std::to_string(n);
}

std::string ReadyKey(int64_t worker) { return kReadyPrefix + std::to_string(worker); }

std::string RoundPrefix(int64_t round) { return std::to_string(round) + "/"; }

std::string EncodeMessage(const Message& m) {
  if (m.removed) return "removed " + m.reason;
  const Assignment& a = m.assignment;
  return "assign " + std::to_string(a.round) + " " + std::to_string(a.rank) + " " +
         std::to_string(a.size) + " " + std::to_string(a.local_rank) + " " +
         std::to_string(a.local_size) + " " + std::to_string(a.cross_rank) + " " +
         std::to_string(a.cross_size) + " " + (a.joined ? "1" : "0") + " " +
         std::to_string(a.hosts_timestamp) + " " + a.host;
}

Result<Message> DecodeMessage(std::string_view text) {
  Message m;
  if (text.starts_with("removed ")) {
    m.removed = true;
    m.reason = std::string(text.substr(8));
    return m;
  }
  std::vector<std::string_view> w = Words(text, 11);
  Assignment& a = m.assignment;
  int joined = 0;
  if (w.size() != 11 || w[0] != "assign" || !Number(w[1], &a.round) || !Number(w[2], &a.rank) ||
      !Number(w[3], &a.size) || !Number(w[4], &a.local_rank) || !Number(w[5], &a.local_size) ||
      !Number(w[6], &a.cross_rank) || !Number(w[7], &a.cross_size) || !Number(w[8], &joined) ||
      !Number(w[9], &a.hosts_timestamp) || w[10].empty() || a.round < 1 || a.size < 1 ||
      a.rank < 0 || a.rank >= a.size || a.local_size < 1 || a.local_size > a.size ||
      a.local_rank < 0 || a.local_rank >= a.local_size || a.cross_size < 1 ||
      a.cross_size > a.size || a.cross_rank < 0 || a.cross_rank >= a.cross_size ||
      (joined != 0 && joined != 1)) {
    return Malformed("message", text);
  }
  a.joined = joined != 0;
  a.host = std::string(w[10]);
  return m;
}

std::string EncodeReady(const ReadyReport& report) {
  std::string text = std::to_string(report.cursor);
  if (report.synced_round > 0 || report.failed_round > 0) {
    text += " " + std::to_string(report.synced_round);
  }
  if (report.failed_round > 0) text += " " + std::to_string(report.failed_round);
  return text;
}

bool DecodeReady(std::string_view text, ReadyReport* report) {
  *report = ReadyReport();
  const char* p = text.data();
  const char* const end = text.data() + text.size();
  int64_t* fields[] = {&report->cursor, &report->synced_round, &report->failed_round};
  int n = 0;
  while (true) {
    auto [q, ec] = std::from_chars(p, end, *fields[n]);
    // Counts and rounds: below 2^62, so that a reader's arithmetic on them cannot overflow.
    if (ec != std::errc() || *fields[n] < 0 || *fields[n] >= (int64_t{1} << 62)) return false;
    ++n;
    p = q;
    if (p == end) break;
    if (*p != ' ' || n == 3) return false;
    ++p;
  }
  // Two numbers name a synced round; a third, a failed one.
  return (n != 2 || report->synced_round > 0) && (n != 3 || report->failed_round > 0);
}

std::string EncodeHostUpdate(int64_t timestamp, int flags) {
  return std::to_string(timestamp) + " " + std::to_string(flags);
}

Status DecodeHostUpdate(std::string_view text, int64_t* timestamp, int* flags) {
  std::vector<std::string_view> w = Words(text, 2);
  if (w.size() != 2 || !Number(w[0], timestamp) || !Number(w[1], flags)) {
    return Malformed("host update", text);
  }
  return Status::OK();
}

}  // namespace hvd::control::elastic
