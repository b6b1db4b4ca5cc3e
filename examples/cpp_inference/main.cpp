// spdl_infer: image files -> top-k classes, with a TorchScript module (and optionally an AOTInductor package)
// whose forward(Tensor data) takes one encoded image as a 1-D uint8 tensor and returns probabilities [1, K];
// export_models.py's Classifier(spdl_torch.deploy.DecodeResize(...), model) saved by
// torch.jit.script(...).save(...), or torch._inductor.aoti_compile_and_package(torch.export.export(...)).
//
// The module calls torch.ops.spdl_torch.decode_image, so the ops library spdl_torch/_C*.so is dlopen()ed
// before anything is loaded: its static TORCH_LIBRARY / TORCH_LIBRARY_IMPL registrars run then. No Python.
//
// Output, one line per image and runner:  <path>\t<runner>\t<class>:<probability> ...
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>

namespace {

struct Options {
  std::string ops_library = SPDL_TORCH_OPS_LIBRARY;
  std::string script_module;
  std::string aoti_package;
  int64_t top_k = 5;
  std::vector<std::string> images;
};

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--ops-library _C.so] [--script model.pt] [--aoti model.pt2] [--top-k K] image...\n"
               "  --ops-library  spdl_torch's ops library (default: %s)\n"
               "  --script       TorchScript module: forward(Tensor uint8[N]) -> Tensor[1, K]\n"
               "  --aoti         AOTInductor package with the same signature\n",
               argv0, SPDL_TORCH_OPS_LIBRARY[0] ? SPDL_TORCH_OPS_LIBRARY : "none");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--ops-library") o.ops_library = value();
    else if (arg == "--script") o.script_module = value();
    else if (arg == "--aoti") o.aoti_package = value();
    else if (arg == "--top-k") o.top_k = std::stoll(value());
    else if (arg == "-h" || arg == "--help") { usage(argv[0]); std::exit(0); }
    else if (arg.rfind("--", 0) == 0) throw std::invalid_argument("unknown option " + arg);
    else o.images.push_back(arg);
  }
  if (o.ops_library.empty()) throw std::invalid_argument("no ops library: pass --ops-library");
  if (o.script_module.empty() && o.aoti_package.empty()) throw std::invalid_argument("pass --script and/or --aoti");
  if (o.images.empty()) throw std::invalid_argument("no image files given");
  if (o.top_k < 1) throw std::invalid_argument("--top-k must be >= 1");
  return o;
}

// The whole file as a 1-D uint8 tensor (what torch.ops.spdl_torch.read_file returns in Python).
at::Tensor read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::streamsize size = in.tellg();
  in.seekg(0);
  at::Tensor data = torch::empty({static_cast<int64_t>(size)}, torch::kUInt8);
  if (size > 0 && !in.read(reinterpret_cast<char*>(data.data_ptr<uint8_t>()), size)) {
    throw std::runtime_error("cannot read " + path);
  }
  return data;
}

void print_top_k(const std::string& path, const char* runner, const at::Tensor& probs, int64_t k) {
  const at::Tensor row = probs.reshape({-1}).to(torch::kFloat64);
  auto [values, indices] = row.topk(std::min<int64_t>(k, row.numel()));
  std::printf("%s\t%s", path.c_str(), runner);
  for (int64_t j = 0; j < values.numel(); ++j) {
    std::printf("\t%lld:%.7f", static_cast<long long>(indices[j].item<int64_t>()), values[j].item<double>());
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdl_infer: %s\n", e.what());
    usage(argv[0]);
    return 2;
  }
  // RTLD_GLOBAL is not needed (the library only registers ops), RTLD_NOW reports missing symbols here.
  if (dlopen(o.ops_library.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    std::fprintf(stderr, "spdl_infer: cannot load the ops library: %s\n", dlerror());
    return 1;
  }
  try {
    c10::InferenceMode guard;
    std::unique_ptr<torch::jit::Module> script;
    std::unique_ptr<torch::inductor::AOTIModelPackageLoader> aoti;
    if (!o.script_module.empty()) {
      script = std::make_unique<torch::jit::Module>(torch::jit::load(o.script_module));
      script->eval();
    }
    if (!o.aoti_package.empty()) {
      aoti = std::make_unique<torch::inductor::AOTIModelPackageLoader>(o.aoti_package);
    }
    for (const std::string& path : o.images) {
      const at::Tensor data = read_file(path);
      if (script) print_top_k(path, "script", script->forward({data}).toTensor(), o.top_k);
      if (aoti) print_top_k(path, "aoti", aoti->run({data}).at(0), o.top_k);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdl_infer: %s\n", e.what());
    return 1;
  }
  return 0;
}
