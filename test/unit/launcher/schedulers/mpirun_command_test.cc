#include "launcher/schedulers/mpirun_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace hvd::launcher {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

discovery::HostSlots Host(const std::string& name, int slots) {
  discovery::HostSlots host;
  host.host = name;
  host.slots = slots;
  return host;
}

MpirunInputs Minimal() {
  MpirunInputs in;
  in.num_proc = 4;
  in.hosts = {Host("a", 2), Host("b", 2)};
  in.command = {"python3", "train.py"};
  return in;
}

std::vector<std::string> Build(const MpirunInputs& in) {
  Result<std::vector<std::string>> argv = BuildMpirunCommand(in);
  EXPECT_TRUE(argv.ok()) << argv.status().ToString();
  return argv.ok() ? *argv : std::vector<std::string>{};
}

TEST(MpirunCommandTest, DetectsFlavours) {
  struct Case {
    const char* output;
    MpiFlavor flavor;
  };
  for (const Case& c :
       {Case{"mpirun (Open MPI) 4.1.4", MpiFlavor::kOpenMpi},
        Case{"mpirun (OpenRTE) 2.1.1", MpiFlavor::kOpenMpi},
        Case{"mpirun (IBM Spectrum MPI) 10.3", MpiFlavor::kSpectrum},
        Case{"HYDRA build details:", MpiFlavor::kMpich},
        Case{"Intel(R) MPI Library for Linux", MpiFlavor::kIntel},
        Case{"something else", MpiFlavor::kUnknown}, Case{"", MpiFlavor::kMissing}}) {
    EXPECT_EQ(DetectMpiFlavor(c.output), c.flavor) << c.output;
  }
}

TEST(MpirunCommandTest, MinimalOpenMpi) {
  EXPECT_THAT(Build(Minimal()),
              ElementsAre("mpirun", "--tag-output", "-np", "4", "-H", "a:2,b:2", "-bind-to", "none",
                          "-map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
                          "python3", "train.py"));
}

TEST(MpirunCommandTest, FullOpenMpi) {
  MpirunInputs in = Minimal();
  in.run_as_root = true;
  in.ssh_port = 2222;
  in.ssh_identity_file = "/k";
  in.output_filename = "/out";
  in.prefix_timestamp = true;
  in.env_names = {"PATH", "HVD_FUSION_THRESHOLD", "PATH"};
  in.mpi_args = "--report-bindings -mca x 'a b'";
  std::vector<std::string> argv = Build(in);
  EXPECT_THAT(argv, ElementsAre("mpirun", "--allow-run-as-root", "--tag-output", "-np", "4", "-H",
                                "a:2,b:2", "-bind-to", "none", "-map-by", "slot", "-mca", "pml",
                                "ob1", "-mca", "btl", "^openib", "-mca", "plm_rsh_args",
                                "-p 2222 -i /k", "--output-filename", "/out", "--timestamp-output",
                                "-x", "HVD_FUSION_THRESHOLD", "-x", "PATH", "--report-bindings",
                                "-mca", "x", "a b", "python3", "train.py"));
}

TEST(MpirunCommandTest, ChosenValuesFollowTheNamesWithTheirValues) {
  // hvdrun's own choices (OMP_NUM_THREADS of --worker-threads share) show in --dry-run's line
  MpirunInputs in = Minimal();
  in.env_names = {"PATH"};
  in.env_settings = {{"OMP_NUM_THREADS", "2"}};
  std::string text;
  for (const std::string& word : Build(in)) text += word + " ";
  EXPECT_THAT(text, HasSubstr("-x PATH -x OMP_NUM_THREADS=2 python3 train.py"));
}

TEST(MpirunCommandTest, NicsAndBindingArgs) {
  MpirunInputs in = Minimal();
  in.nics = {"eth0", "eth1"};
  in.binding_args = "-bind-to core -map-by socket";
  std::string text;
  for (const std::string& word : Build(in)) text += word + " ";
  EXPECT_THAT(text, HasSubstr("-bind-to core -map-by socket -mca pml"));
  EXPECT_THAT(text, HasSubstr("-mca btl_tcp_if_include eth0,eth1 -x NCCL_SOCKET_IFNAME=eth0,eth1"));
  EXPECT_EQ(text.find("-bind-to none"), std::string::npos);
}

TEST(MpirunCommandTest, EnvironmentExclusions) {
  for (const char* name : {"BASH_FUNC_module%%", "OLDPWD", "CUDA_VISIBLE_DEVICES",
                           "MY_CUDA_VISIBLE_DEVICES", "_HOROVOD_SECRET_KEY", "HVD_SECRET_FD"}) {
    EXPECT_FALSE(IsExportableVariable(name)) << name;
  }
  EXPECT_TRUE(IsExportableVariable("CUDA_HOME"));
  MpirunInputs in = Minimal();
  in.env_names = {"OLDPWD", "BASH_FUNC_x%%", "CUDA_VISIBLE_DEVICES", "HOME"};
  std::string text;
  for (const std::string& word : Build(in)) text += word + " ";
  EXPECT_THAT(text, HasSubstr("-x HOME "));
  EXPECT_EQ(text.find("OLDPWD"), std::string::npos);
  EXPECT_EQ(text.find("BASH_FUNC"), std::string::npos);
  EXPECT_EQ(text.find("CUDA_VISIBLE"), std::string::npos);
}

TEST(MpirunCommandTest, MpichAndErrors) {
  MpirunInputs in = Minimal();
  in.flavor = MpiFlavor::kMpich;
  in.nics = {"eth0"};
  in.output_filename = "/out";
  EXPECT_THAT(Build(in), ElementsAre("mpirun", "-l", "-np", "4", "-ppn", "2", "-hosts", "a,b",
                                     "-iface", "eth0", "-genv", "NCCL_SOCKET_IFNAME=eth0",
                                     "-outfile-pattern", "/out", "python3", "train.py"));
  in.hosts = {Host("a", 2), Host("b", 1)};
  EXPECT_THAT(BuildMpirunCommand(in).status().message(), HasSubstr("same slots"));
  MpirunInputs missing = Minimal();
  missing.flavor = MpiFlavor::kMissing;
  EXPECT_THAT(BuildMpirunCommand(missing).status().message(), HasSubstr("--gloo"));
  MpirunInputs unknown = Minimal();
  unknown.flavor = MpiFlavor::kUnknown;
  EXPECT_THAT(BuildMpirunCommand(unknown).status().message(), HasSubstr("--gloo"));
  MpirunInputs quotes = Minimal();
  quotes.mpi_args = "-x 'unterminated";
  EXPECT_THAT(BuildMpirunCommand(quotes).status().message(), HasSubstr("--mpi-args"));
}

TEST(MpirunCommandTest, SshKnownHostsAndGlooInterfaceReachMpirun) {
  // Given the cluster's key and known_hosts, accept-new, and one NIC
  MpirunInputs in = Minimal();
  in.ssh_identity_file = "/state/id_ed25519";
  in.ssh_known_hosts_file = "/state/known_hosts";
  in.ssh_accept_new_host_keys = true;
  in.nics = {"eth0"};
  // When the command is built
  std::vector<std::string> argv = Build(in);
  // Then mpirun's ssh gets all three as one plm_rsh_args word, and Gloo data under the MPI
  // controller binds the NIC
  auto rsh = std::find(argv.begin(), argv.end(), "plm_rsh_args");
  ASSERT_NE(rsh, argv.end());
  ASSERT_NE(rsh + 1, argv.end());
  EXPECT_EQ(*(rsh + 1),
            "-i /state/id_ed25519 -o UserKnownHostsFile=/state/known_hosts -o "
            "StrictHostKeyChecking=accept-new");
  std::string text;
  for (const std::string& word : argv) text += word + " ";
  EXPECT_THAT(text, HasSubstr("-mca btl_tcp_if_include eth0 -x NCCL_SOCKET_IFNAME=eth0 "
                              "-x HVD_GLOO_IFACE=eth0 "));
}

TEST(MpirunCommandTest, McaParametersInMpiArgsReplaceHvdrunsOwn) {
  // Given --mpi-args that set btl (as hosts sharing one kernel need) and plm_rsh_args
  MpirunInputs in = Minimal();
  in.ssh_identity_file = "/k";
  in.mpi_args = "--mca btl self,tcp -mca plm_rsh_args '-p 2200' --mca oob_tcp_if_include lo";
  // When the command is built
  std::string text;
  for (const std::string& word : Build(in)) text += word + " ";
  // Then each parameter appears once, with the user's value; the rest stay
  EXPECT_EQ(text.find("^openib"), std::string::npos) << text;
  EXPECT_EQ(text.find("-i /k"), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("-mca pml ob1 --mca btl self,tcp -mca plm_rsh_args -p 2200 "
                              "--mca oob_tcp_if_include lo python3"));
}

TEST(MpirunCommandTest, ManyHostsDisableTreeSpawn) {
  MpirunInputs in = Minimal();
  in.hosts.clear();
  for (int i = 0; i < 64; ++i) in.hosts.push_back(Host("h" + std::to_string(i), 1));
  std::string text;
  for (const std::string& word : Build(in)) text += word + " ";
  EXPECT_THAT(text, HasSubstr("-mca plm_rsh_no_tree_spawn true -mca plm_rsh_num_concurrent 64"));
}

TEST(JsrunCommandTest, CommandAndRankfile) {
  EXPECT_THAT(
      BuildJsrunCommand("/tmp/erf", "/out", "--x", {"python3", "t.py"}),
      ElementsAre("jsrun", "--erf_input", "/tmp/erf", "--stdio_stderr", "/out", "--stdio_stdout",
                  "/out", "--smpiargs", "-mca pml ob1 -mca btl ^openib --x", "python3", "t.py"));
  Result<std::string> erf = BuildJsrunRankfile({Host("n1", 2), Host("n2", 2)}, 3, 4, 8, 2);
  ASSERT_TRUE(erf.ok()) << erf.status().ToString();
  EXPECT_EQ(*erf,
            "overlapping_rs: allow\ncpu_index_using: logical\n"
            "rank: 0: { hostname: n1; cpu: {0-3} ; gpu: * ; mem: * }\n"
            "rank: 1: { hostname: n1; cpu: {4-7} ; gpu: * ; mem: * }\n"
            "rank: 2: { hostname: n2; cpu: {0-3} ; gpu: * ; mem: * }\n");
  EXPECT_THAT(BuildJsrunRankfile({Host("n1", 6)}, 6, 4, 8, 2).status().message(),
              HasSubstr("only 4 GPUs"));
}

}  // namespace
}  // namespace hvd::launcher
