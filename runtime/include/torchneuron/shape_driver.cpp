/*
 * The shape driver: linked (on the host) with a library's shape sources, it runs their
 * NEURON_LIBRARY registration and their shape functions for the build and the
 * simulator (`cargo sim package`, qemu/src's C++ packaging).
 *
 *   shape_driver list
 *       library <lib>
 *       op <name> kernel <compute function> args <kind>...     (kinds: tensor int long
 *                                                                float double)
 *   shape_driver shape <op> <arg>...
 *       args: tensor:<Dtype>:<d0>x<d1>...  int:<v>  long:<v>  float:<v>  double:<v>
 *       output <Dtype> <d0>x<d1>...
 *
 * Errors go to stderr, with exit status 1: more than 10 ops (the vendor's limit), an
 * op or argument that does not fit, a shape function that throws or fails, an output
 * of more than 8 dimensions or with a dimension above 65535.
 */
#include <torchneuron/register.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

/* What neuron_cxx_fail throws on the host. */
struct ShapeError : std::exception {
    std::string message;
    explicit ShapeError(std::string m) : message(std::move(m)) {}
    const char *what() const noexcept override { return message.c_str(); }
};

/* An argument of `shape` that does not fit the op's signature: the caller's mistake,
   reported as such, not as the shape function's failure. */
struct ArgumentError : std::exception {
    std::string message;
    explicit ArgumentError(std::string m) : message(std::move(m)) {}
    const char *what() const noexcept override { return message.c_str(); }
};

constexpr size_t kMaxOps = 10;

int error(const std::string &message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    return 1;
}

bool parse_dtype(const std::string &text, c10::ScalarType &out) {
    for (c10::ScalarType t : {c10::ScalarType::Byte, c10::ScalarType::Char, c10::ScalarType::Short, c10::ScalarType::Int,
                              c10::ScalarType::Long, c10::ScalarType::Half, c10::ScalarType::Float,
                              c10::ScalarType::BFloat16}) {
        if (text == c10::toString(t)) {
            out = t;
            return true;
        }
    }
    return false;
}

/* One command-line argument of `shape` into what the shape function takes. */
torchneuron::HostArg parse_arg(int index, const std::string &text, torchneuron::ArgKind wanted) {
    torchneuron::HostArg arg{wanted, torch::Tensor(), 0, 0.0};
    size_t colon = text.find(':');
    std::string kind = text.substr(0, colon);
    std::string value = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (kind != torchneuron::arg_kind_name(wanted)) {
        throw ArgumentError("argument " + std::to_string(index) + " (" + text + ") does not fit: the op takes a " +
                            torchneuron::arg_kind_name(wanted) + " there");
    }
    switch (wanted) {
    case torchneuron::ArgKind::Tensor: {
        size_t split = value.find(':');
        c10::ScalarType dtype;
        if (split == std::string::npos || !parse_dtype(value.substr(0, split), dtype)) {
            throw ArgumentError("argument " + std::to_string(index) + " (" + text +
                                ") does not fit: expected tensor:<Dtype>:<d0>x<d1>...");
        }
        std::vector<int64_t> dims;
        std::string rest = value.substr(split + 1);
        for (size_t start = 0; start <= rest.size();) {
            size_t end = rest.find('x', start);
            if (end == std::string::npos) {
                end = rest.size();
            }
            dims.push_back(std::strtoll(rest.substr(start, end - start).c_str(), nullptr, 10));
            start = end + 1;
        }
        arg.tensor = torch::empty(c10::IntArrayRef(dims.data(), dims.size()), dtype);
        break;
    }
    case torchneuron::ArgKind::Int:
    case torchneuron::ArgKind::Long: arg.integer = std::strtoll(value.c_str(), nullptr, 10); break;
    default: arg.real = std::strtod(value.c_str(), nullptr); break;
    }
    return arg;
}

int list() {
    const torchneuron::Registry &r = torchneuron::registry();
    if (r.library == nullptr) {
        return error("the shape sources have no NEURON_LIBRARY");
    }
    if (r.count > kMaxOps) {
        return error("NEURON_LIBRARY(" + std::string(r.library) + ") registers " + std::to_string(r.count) +
                     " functions: a library has at most " + std::to_string(kMaxOps));
    }
    if (r.too_many_args) {
        return error("a shape function takes more than 10 arguments (the runtime passes at most 10)");
    }
    std::printf("library %s\n", r.library);
    for (size_t i = 0; i < r.count; i++) {
        const torchneuron::OpDef &op = r.ops[i];
        std::printf("op %s kernel %s args", op.name, op.kernel);
        for (size_t a = 0; a < op.arity; a++) {
            std::printf(" %s", torchneuron::arg_kind_name(op.kinds[a]));
        }
        std::printf("\n");
    }
    return 0;
}

int shape(const char *name, int argc, char **argv) {
    const torchneuron::Registry &r = torchneuron::registry();
    for (size_t i = 0; i < r.count && i < torchneuron::kMaxRecordedOps; i++) {
        const torchneuron::OpDef &op = r.ops[i];
        if (std::strcmp(op.name, name) != 0) {
            continue;
        }
        if (size_t(argc) != op.arity) {
            return error(std::string("op ") + name + " takes " + std::to_string(op.arity) + " arguments, not " +
                         std::to_string(argc));
        }
        try {
            std::vector<torchneuron::HostArg> args;
            for (int a = 0; a < argc; a++) {
                args.push_back(parse_arg(a, argv[a], op.kinds[a]));
            }
            torch::Tensor out = op.call(op.shape_fn, args.data());
            if (!out.defined()) {
                return error(std::string("the shape function of ") + name + " returned no tensor");
            }
            std::printf("output %s ", c10::toString(out.scalar_type()));
            for (int64_t d = 0; d < out.dim(); d++) {
                std::printf(d == 0 ? "%lld" : "x%lld", static_cast<long long>(out.size(d)));
            }
            std::printf("\n");
            return 0;
        } catch (const ArgumentError &e) {
            return error(std::string("op ") + name + ": " + e.what());
        } catch (const std::exception &e) {
            return error(std::string("the shape function of ") + name + " failed: " + e.what());
        } catch (...) {
            return error(std::string("the shape function of ") + name + " threw");
        }
    }
    return error(std::string("no op named ") + name);
}

} // namespace

extern "C" void neuron_cxx_fail(uint32_t status, const char *message) {
    throw ShapeError(std::string(message) + " (status " + std::to_string(status) + ")");
}

extern "C" uint32_t neuron_cxx_record(uint32_t status, const char *message) {
    neuron_cxx_fail(status, message);
}

int main(int argc, char **argv) {
    if (argc >= 2 && std::strcmp(argv[1], "list") == 0) {
        return list();
    }
    if (argc >= 3 && std::strcmp(argv[1], "shape") == 0) {
        return shape(argv[2], argc - 3, argv + 3);
    }
    return error("usage: shape_driver list | shape_driver shape <op> <arg>...");
}
