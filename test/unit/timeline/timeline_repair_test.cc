#include "timeline/timeline_repair.h"

#include <gtest/gtest.h>

#include <string>

#include "test/unit/timeline/test_files.h"
#include "timeline/timeline_tool.h"
#include "timeline/timeline_writer.h"

namespace hvd::timeline {
namespace {

using testing::ParseFile;
using testing::ReadFile;
using testing::WriteFile;

class TimelineRepairTest : public testing::TempDirTest {
 protected:
  // A file as a TimelineWriter leaves it when closed: valid, ending in spaces and "\n]\n".
  std::string WrittenFile(int records) {
    const std::string path = Path("t.json");
    TimelineWriter writer(4096);
    EXPECT_TRUE(writer.Open(path, {}).ok());
    for (int i = 0; i < records; ++i) {
      EXPECT_TRUE(writer.Enqueue(TraceRecord{'B', "EVENT_" + std::to_string(i), 1, 0, i, {}}));
    }
    writer.Close();
    return path;
  }
};

// What the first write of a growth adds (TimelineWriter::Grow): spaces past the old end and a
// new closing bracket in the last bytes of a page. Killed before the second write (the old
// bracket becoming spaces), the file is left like this.
std::string TearMidGrowth(const std::string& text, size_t growth) {
  const size_t end = (text.size() + growth + 3 + 4095) / 4096 * 4096;
  return text + std::string(end - 3 - text.size(), ' ') + "\n]\n";
}

TEST_F(TimelineRepairTest, AFileTornMidGrowthIsRepairedToTheRecordsItHeld) {
  // Given a written file, and the same file torn mid-growth (more spaces than one read block)
  const std::string path = WrittenFile(100);
  const std::string valid = ReadFile(path);
  const nlohmann::json records = ParseFile(path);
  for (size_t growth : {size_t{0}, size_t{4096}, size_t{200} << 10}) {
    WriteFile(path, TearMidGrowth(valid, growth));
    ASSERT_TRUE(nlohmann::json::parse(ReadFile(path), nullptr, false).is_discarded())
        << "a strict parser refuses the torn file";
    // When it is repaired
    Result<bool> repaired = RepairTornTimelineFile(path);
    // Then it parses to the same records, and only the old bracket changed
    ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
    EXPECT_TRUE(*repaired) << growth;
    EXPECT_EQ(ParseFile(path), records) << growth;
    std::string expected = TearMidGrowth(valid, growth);
    expected.replace(valid.size() - 3, 3, "   ");
    EXPECT_EQ(ReadFile(path), expected) << growth;
    // And a second repair finds nothing to do
    repaired = RepairTornTimelineFile(path);
    ASSERT_TRUE(repaired.ok());
    EXPECT_FALSE(*repaired);
  }
}

TEST_F(TimelineRepairTest, AnyOtherFileIsLeftAsItIs) {
  // Given files that are valid, or damaged some other way than a torn growth
  const std::string written = ReadFile(WrittenFile(3));
  const std::string cases[] = {
      written,
      "[\n]\n",
      "[\n{\"name\":\"a\"}",                // unterminated (Horovod after a kill)
      "[\n{\"name\":\"a\"}\n]\n  \n]\n x",  // garbage after the brackets
      "[\n{\"name\":\"a\"}]  \n]\n",        // "]" not in the writer's tail form
      "\n]\n",                              // a tail alone
      "",
  };
  for (const std::string& content : cases) {
    const std::string path = Path("other.json");
    WriteFile(path, content);
    // When repair is asked for
    Result<bool> repaired = RepairTornTimelineFile(path);
    // Then nothing is changed
    ASSERT_TRUE(repaired.ok()) << content;
    EXPECT_FALSE(*repaired) << content;
    EXPECT_EQ(ReadFile(path), content);
    std::string text = content;
    EXPECT_FALSE(RepairTornTimelineText(&text)) << content;
    EXPECT_EQ(text, content);
  }
}

TEST_F(TimelineRepairTest, TheTextFormRepairsTheSameWay) {
  const std::string valid = ReadFile(WrittenFile(5));
  std::string text = TearMidGrowth(valid, 8192);
  ASSERT_TRUE(RepairTornTimelineText(&text));
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(valid));
}

TEST_F(TimelineRepairTest, AMissingFileIsAnErrorNamingIt) {
  Result<bool> repaired = RepairTornTimelineFile(Path("absent.json"));
  ASSERT_FALSE(repaired.ok());
  EXPECT_NE(repaired.status().message().find("absent.json"), std::string::npos)
      << repaired.status().message();
}

// A file cut at any byte (a copy, a full disk, Horovod's writer killed) keeps every event that
// is whole: the check says how it ends, and a repair cuts the partial event and closes the
// array. `repair` used to call all of these "not torn mid-growth" and leave them unreadable.
TEST_F(TimelineRepairTest, AFileCutAtAnyByteIsRepairedToItsCompleteEvents) {
  // Given a written file and the records it holds
  const std::string valid = ReadFile(WrittenFile(6));
  const nlohmann::json records = nlohmann::json::parse(valid);
  const size_t closing = valid.rfind(']');
  const size_t records_end = valid.find_last_not_of(" \n]") + 1;
  std::vector<size_t> cuts;
  for (size_t cut = 0; cut < records_end + 8; ++cut) cuts.push_back(cut);
  for (size_t cut = closing - 2; cut <= valid.size(); ++cut) cuts.push_back(cut);
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    // When it is cut at that byte and checked
    std::string text = valid.substr(0, cut);
    const TimelineCheck check = CheckTimelineText(text);
    if (cut == 0) {
      EXPECT_EQ(check.shape, TimelineShape::kEmpty);
      continue;
    }
    if (cut > closing) {
      EXPECT_EQ(check.shape, TimelineShape::kComplete);
      continue;
    }
    // Then a cut between records (or in the trailing spaces) reads as an unclosed array, one
    // inside a record as truncated; either way the repair holds the whole records before it
    // (a '}' ends one unless another '}' follows: the last record nests its args)
    const size_t last = text.find_last_not_of(" \n,");
    const bool between = text[last] == '[' || (text[last] == '}' && valid[last + 1] != '}');
    EXPECT_EQ(check.shape, between ? TimelineShape::kUnclosed : TimelineShape::kTruncated) << text;
    ASSERT_TRUE(RepairTimelineText(check, &text));
    const nlohmann::json repaired = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(repaired.is_discarded()) << text;
    ASSERT_EQ(repaired.size(), static_cast<size_t>(check.events));
    for (size_t i = 0; i < repaired.size(); ++i) EXPECT_EQ(repaired[i], records[i]);
    if (cut == closing) {
      EXPECT_EQ(repaired, records);
    }
  }
}

TEST_F(TimelineRepairTest, TheCheckNamesWhatIsNotATimeline) {
  struct Case {
    std::string text;
    TimelineShape shape;
    std::string detail;  // substring
  };
  const Case cases[] = {
      {"", TimelineShape::kEmpty, ""},
      {" \n\t", TimelineShape::kEmpty, ""},
      {"\x8f\x01\xfe garbage", TimelineShape::kNotTimeline, "not JSON"},
      {"{\"a\":1}", TimelineShape::kNotTimeline, "without a \"traceEvents\" array"},
      {"42", TimelineShape::kNotTimeline, "a JSON number"},
      {"{\"traceEvents\":[", TimelineShape::kNotTimeline, "not JSON"},
      {"[\n{\"a\":1}]x", TimelineShape::kNotTimeline, "not JSON"},
      {"[\n{\"a\":1}, garbage, {\"b\":", TimelineShape::kNotTimeline, "not JSON"},
      {"[\n{\"a\":1},\n{\"b\":2},\n", TimelineShape::kUnclosed, ""},  // Horovod's form
      {"[\n{\"a\":\"}]\\\"\"},\n{\"b\":", TimelineShape::kTruncated, ""},
      {"{\"traceEvents\":[]}", TimelineShape::kComplete, ""},
      {"[]", TimelineShape::kComplete, ""},
      // A NUL byte ends nlohmann's parse: "[]" and a NUL would pass for complete.
      {std::string("[]\0 garbage", 11), TimelineShape::kNotTimeline, "a NUL byte at byte 3"},
      {std::string("[\n{\"a\":1},\0\0\0", 14), TimelineShape::kNotTimeline, "NUL byte"},
      {std::string(8, '\0'), TimelineShape::kNotTimeline, "a NUL byte at byte 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const TimelineCheck check = CheckTimelineText(c.text);
    EXPECT_EQ(check.shape, c.shape);
    EXPECT_NE(check.detail.find(c.detail), std::string::npos) << check.detail;
    std::string text = c.text;
    EXPECT_EQ(RepairTimelineText(check, &text), Repairable(check));
    if (!Repairable(check)) {
      EXPECT_EQ(text, c.text);
    }
  }
  EXPECT_EQ(CheckTimelineText("[\n{\"a\":\"}]\\\"\"},\n{\"b\":").events, 1);
}

TEST_F(TimelineRepairTest, TheToolSaysWhatAFileIsAndFailsWhenItIsNoTimeline) {
  struct Case {
    std::string content;
    int code;
    std::string message;  // substring of stdout (code 0) or stderr
    std::string after;    // the file afterwards; "" = as it was
  };
  const Case cases[] = {
      {"\x8f\x01\xfe garbage", kToolFileError, "not a timeline: not JSON", ""},
      {"", kToolFileError, "empty (0 bytes)", ""},
      {"{\"a\":1}", kToolFileError, "not a timeline: a JSON object without", ""},
      {"[\n{\"a\":1},\n{\"b\":", kToolOk, "truncated at byte 16 inside an event",
       "[\n{\"a\":1}\n]\n"},
      {"[\n{\"a\":1},\n", kToolOk, "never closed", "[\n{\"a\":1}\n]\n"},
      {"[\n{\"a\":1}\n]\n", kToolOk, "a complete timeline; nothing to repair", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.content);
    // Given a file, when the tool repairs it
    const std::string path = Path("damaged.json");
    WriteFile(path, c.content);
    std::ostringstream out, err;
    const int code = RunTimelineTool({"repair", path}, out, err);
    // Then it names what the file is, fails unless it is (or now is) a timeline, and writes
    // only a repairable one
    EXPECT_EQ(code, c.code);
    EXPECT_NE((code == kToolOk ? out : err).str().find(c.message), std::string::npos)
        << out.str() << err.str();
    EXPECT_EQ(out.str().find("not torn mid-growth"), std::string::npos);
    EXPECT_EQ(ReadFile(path), c.after.empty() ? c.content : c.after);
  }
}

TEST_F(TimelineRepairTest, TheToolSummarisesATornFileAndRepairsIt) {
  // Given a torn file
  const std::string path = WrittenFile(4);
  const std::string valid = ReadFile(path);
  WriteFile(path, TearMidGrowth(valid, 4096));
  // When summarised, the tool reads it as repaired and says so, leaving the file as it is
  std::ostringstream out, err;
  EXPECT_EQ(RunTimelineTool({"summary", path}, out, err), kToolOk) << err.str();
  EXPECT_NE(out.str().find("torn mid-growth"), std::string::npos) << out.str();
  EXPECT_TRUE(nlohmann::json::parse(ReadFile(path), nullptr, false).is_discarded());
  // When repaired by the tool, the file parses and a summary no longer mentions a tear
  std::ostringstream out2, err2;
  EXPECT_EQ(RunTimelineTool({"repair", path}, out2, err2), kToolOk) << err2.str();
  EXPECT_NE(out2.str().find(": repaired"), std::string::npos) << out2.str();
  EXPECT_EQ(ParseFile(path), nlohmann::json::parse(valid));
  std::ostringstream out3, err3;
  EXPECT_EQ(RunTimelineTool({"summary", path}, out3, err3), kToolOk);
  EXPECT_EQ(out3.str().find("torn"), std::string::npos) << out3.str();
  // And a missing file or no file is a clear error
  std::ostringstream out4, err4;
  EXPECT_EQ(RunTimelineTool({"repair", Path("absent.json")}, out4, err4), kToolFileError);
  EXPECT_NE(err4.str().find("absent.json"), std::string::npos) << err4.str();
  std::ostringstream out5, err5;
  EXPECT_EQ(RunTimelineTool({"repair"}, out5, err5), kToolUsageError);
  EXPECT_NE(err5.str().find("FILE is required"), std::string::npos) << err5.str();
}

}  // namespace
}  // namespace hvd::timeline
