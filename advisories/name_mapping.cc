#include "advisories/name_mapping.h"

#include <algorithm>
#include <vector>

namespace lockstep::advisories {
namespace {

// Conda packages (conda-forge and defaults, names PEP 503-normalised) that are PyPI
// projects, with the PyPI name. Kept sorted by conda name (a test checks it). Left out
// on purpose: conda names that are C/C++ libraries or tools although PyPI has a project
// of that name (xxhash, zstd, yaml, tzdata, ninja, tbb, sentencepiece, python itself).
constexpr CondaPypiName kCondaPypi[] = {
    {"accelerate", "accelerate"},
    {"aiohttp", "aiohttp"},
    {"aiosignal", "aiosignal"},
    {"anyio", "anyio"},
    {"async-timeout", "async-timeout"},
    {"attrs", "attrs"},
    {"auto-gptq", "auto-gptq"},
    {"babel", "babel"},
    {"bleach", "bleach"},
    {"bokeh", "bokeh"},
    {"boto3", "boto3"},
    {"botocore", "botocore"},
    {"brotli-python", "brotli"},
    {"certifi", "certifi"},
    {"cffi", "cffi"},
    {"charset-normalizer", "charset-normalizer"},
    {"click", "click"},
    {"cloudpickle", "cloudpickle"},
    {"colorama", "colorama"},
    {"coloredlogs", "coloredlogs"},
    {"cryptography", "cryptography"},
    {"dask", "dask"},
    {"dask-core", "dask"},
    {"dataclasses", "dataclasses"},
    {"datasets", "datasets"},
    {"deepspeed", "deepspeed"},
    {"dill", "dill"},
    {"distributed", "distributed"},
    {"einops", "einops"},
    {"fastapi", "fastapi"},
    {"filelock", "filelock"},
    {"flash-attn", "flash-attn"},
    {"flask", "flask"},
    {"frozenlist", "frozenlist"},
    {"fsspec", "fsspec"},
    {"gitpython", "gitpython"},
    {"gmpy2", "gmpy2"},
    {"gradio", "gradio"},
    {"grpcio", "grpcio"},
    {"gunicorn", "gunicorn"},
    {"h11", "h11"},
    {"h5py", "h5py"},
    {"hjson-py", "hjson"},
    {"httpx", "httpx"},
    {"huggingface-hub", "huggingface-hub"},
    {"humanfriendly", "humanfriendly"},
    {"idna", "idna"},
    {"importlib-metadata", "importlib-metadata"},
    {"ipython", "ipython"},
    {"jax", "jax"},
    {"jaxlib", "jaxlib"},
    {"jinja2", "jinja2"},
    {"joblib", "joblib"},
    {"jupyter-server", "jupyter-server"},
    {"jupyterlab", "jupyterlab"},
    {"keras", "keras"},
    {"lightning", "lightning"},
    {"llvmlite", "llvmlite"},
    {"lxml", "lxml"},
    {"markdown", "markdown"},
    {"markupsafe", "markupsafe"},
    {"matplotlib", "matplotlib"},
    {"matplotlib-base", "matplotlib"},
    {"mlflow", "mlflow"},
    {"mpmath", "mpmath"},
    {"msgpack-python", "msgpack"},
    {"multidict", "multidict"},
    {"multiprocess", "multiprocess"},
    {"nbconvert", "nbconvert"},
    {"networkx", "networkx"},
    {"nltk", "nltk"},
    {"notebook", "notebook"},
    {"numba", "numba"},
    {"numpy", "numpy"},
    {"onnx", "onnx"},
    {"onnxruntime", "onnxruntime"},
    {"optimum", "optimum"},
    {"packaging", "packaging"},
    {"pandas", "pandas"},
    {"paramiko", "paramiko"},
    {"peft", "peft"},
    {"pillow", "pillow"},
    {"pip", "pip"},
    {"protobuf", "protobuf"},
    {"psutil", "psutil"},
    {"py-cpuinfo", "py-cpuinfo"},
    {"py-opencv", "opencv-python"},
    {"pyarrow", "pyarrow"},
    {"pydantic", "pydantic"},
    {"pydantic-core", "pydantic-core"},
    {"pygments", "pygments"},
    {"pyjwt", "pyjwt"},
    {"pyopenssl", "pyopenssl"},
    {"pysocks", "pysocks"},
    {"python-dateutil", "python-dateutil"},
    {"python-multipart", "python-multipart"},
    {"python-tzdata", "tzdata"},
    {"python-xxhash", "xxhash"},
    {"pytorch", "torch"},
    {"pytorch-lightning", "pytorch-lightning"},
    {"pytz", "pytz"},
    {"pyyaml", "pyyaml"},
    {"ray-core", "ray"},
    {"regex", "regex"},
    {"requests", "requests"},
    {"sacremoses", "sacremoses"},
    {"safetensors", "safetensors"},
    {"scikit-learn", "scikit-learn"},
    {"scipy", "scipy"},
    {"sentencepiece-python", "sentencepiece"},
    {"setuptools", "setuptools"},
    {"six", "six"},
    {"starlette", "starlette"},
    {"sympy", "sympy"},
    {"tensorflow", "tensorflow"},
    {"tensorflow-base", "tensorflow"},
    {"tokenizers", "tokenizers"},
    {"torchaudio", "torchaudio"},
    {"torchvision", "torchvision"},
    {"tornado", "tornado"},
    {"tqdm", "tqdm"},
    {"transformers", "transformers"},
    {"triton", "triton"},
    {"typing-extensions", "typing-extensions"},
    {"urllib3", "urllib3"},
    {"uvicorn", "uvicorn"},
    {"werkzeug", "werkzeug"},
    {"wheel", "wheel"},
    {"yarl", "yarl"},
    {"zipp", "zipp"},
};

std::span<const CondaPypiName> table() { return kCondaPypi; }

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// "python3.11" / "python3" / "python311": the interpreter prefix of nixpkgs' Python
// package names.
bool isPythonToken(std::string_view t) {
  if (!t.starts_with("python") || t.size() == 6) return false;
  for (char c : t.substr(6)) {
    if (!isDigit(c) && c != '.') return false;
  }
  return isDigit(t[6]);
}

// "/nix/store/<32 chars>-python3.11-requests-2.31.0[-dist]" -> ("requests", "2.31.0").
bool nixPythonName(std::string_view storePath, std::string& name, std::string& version) {
  constexpr std::string_view kStore = "/nix/store/";
  if (!storePath.starts_with(kStore)) return false;
  std::string_view base = storePath.substr(kStore.size());
  if (base.size() < 34 || base[32] != '-') return false;
  base = base.substr(33);
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    size_t dash = base.find('-', start);
    tokens.push_back(base.substr(start, dash == std::string_view::npos ? dash : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  if (tokens.size() < 3 || !isPythonToken(tokens[0])) return false;
  // The first token after the name that starts with a digit is the version; what follows
  // it is an output name ("dist", "dev", "doc").
  for (size_t i = 2; i < tokens.size(); ++i) {
    if (!tokens[i].empty() && isDigit(tokens[i][0])) {
      std::string n;
      for (size_t k = 1; k < i; ++k) {
        if (k > 1) n += '-';
        n += tokens[k];
      }
      name = std::move(n);
      version = std::string(tokens[i]);
      return true;
    }
  }
  return false;
}

}  // namespace

std::span<const CondaPypiName> condaPypiTable() { return table(); }

PackageMapping osvPackageFor(const closure::Package& p) {
  PackageMapping m;
  if (p.ecosystem == "pypi") {
    if (p.version.empty()) {
      m.reason = "no version in the lock";
      return m;
    }
    m.matched = true;
    m.ref = {"PyPI", closure::normalizePypiName(p.name), p.version, "pypi"};
    return m;
  }
  if (p.ecosystem == "conda") {
    const std::string key = closure::normalizePypiName(p.name);
    const auto t = table();
    auto it = std::lower_bound(
        t.begin(), t.end(), key,
        [](const CondaPypiName& row, const std::string& k) { return row.conda < k; });
    if (it == t.end() || it->conda != key) {
      m.reason = "conda package not known to be a PyPI project (no OSV ecosystem for conda)";
      return m;
    }
    m.matched = true;
    m.ref = {"PyPI", std::string(it->pypi), p.version, "conda table"};
    return m;
  }
  if (p.ecosystem == "nix") {
    for (const std::string& d : p.digests) {
      std::string name;
      std::string version;
      if (nixPythonName(d, name, version)) {
        m.matched = true;
        m.ref = {"PyPI", closure::normalizePypiName(name), version, "nix python store path"};
        return m;
      }
    }
    m.reason = "Nix store path not named python<X.Y>-<pname>-<version> (no OSV ecosystem for Nix)";
    return m;
  }
  m.reason = "no OSV ecosystem for \"" + p.ecosystem + "\"";
  return m;
}

}  // namespace lockstep::advisories
