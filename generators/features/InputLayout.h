#pragma once
// Input layouts and boundary values: a program input can reach forward transposed, strided
// (sliced with a step, or at a storage offset), expanded (a stride 0) or channels-last, with the same
// logical shape and the values of its distribution; and a floating input can hold boundary values
// (-0.0, denormals, the smallest normal, +-max, +-inf and NaN, exact ties). make_inputs draws the
// storage, puts the boundary values in, then applies the layout (PythonEmitter).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generators/ir/Graph.h"
#include "generators/OpCatalog.h"
#include "generators/ir/Rng.h"

namespace tcfuzz::gen {

/// The non-contiguous layout kinds, each a key of GenPolicy::layoutWeights.
const std::vector<std::string>& layoutKinds();

/// Why `layout` cannot hold an input of type `t` drawn from `dist` ("" when it can): a dim out of
/// range, a rank channels-last lacks, a step or offset beyond its bound, or a randperm draw (its
/// distinct values) that a longer storage or an expansion would break.
std::string layoutProblem(const Layout& layout, const TensorType& t, const Distribution& dist);
/// The shape make_inputs draws before it applies the layout.
std::vector<int64_t> storageShape(const Layout& layout, const TensorType& t);
/// The Python that turns the drawn storage into the input: ".transpose(0, 2)", "[:, 1::2]",
/// ".expand(3, 4)", ".contiguous(memory_format=torch.channels_last)"; "" when contiguous.
std::string layoutPython(const Layout& layout, const TensorType& t);
/// Whether the input is not contiguous (torch's is_contiguous() is false) under this layout.
bool isNonContiguous(const Layout& layout, const TensorType& t);
/// Whether the input starts at a storage offset other than 0.
bool hasStorageOffset(const Layout& layout, const TensorType& t);
/// A few words for headers and reports: "transposed (dims 0, 2)", "strided (dim 1, step 2, offset 1)".
std::string describeLayout(const Layout& layout);

/// A random layout that makes `t` non-contiguous or moves its storage offset, its kind drawn with
/// `weights` (kind -> weight) among the kinds that fit; contiguous when none fits.
Layout randomLayout(const TensorType& t, const Distribution& dist, const std::map<std::string, double>& weights, Rng& rng);
/// Whether input 0 of an op that eager refuses in some strided layouts (OpSpec::denseInput) is
/// `value` or computed from it: clone, copy_ and pointwise ops keep their input's strides, so such
/// an input stays contiguous.
bool readByDenseInputOp(const Graph& g, const OpCatalog& catalog, int value);
/// The value whose storage `value` views: follows producers whose op returns a view of input 0
/// (OpSpec::view) back to the first value that is none; `value` itself when it is no view.
int viewBaseOf(const Graph& g, const OpCatalog& catalog, int value);
/// The strides and storage offset make_inputs gives an input of type `t` under `layout`.
Geometry inputGeometry(const Layout& layout, const TensorType& t);
/// The geometry eager gives each value (indexed like g.values) where the IR determines it: an
/// input's layout, a parameter (row-major), a view op's stride rule over input 0's geometry, a fresh
/// row-major result (a copying reshape, `.contiguous()`, an in-place op on a contiguous value, an op
/// that is no view and not OpSpec::stridedOutput on contiguous inputs); nullopt where unsure.
std::vector<std::optional<Geometry>> valueGeometries(const Graph& g, const OpCatalog& catalog);
/// Whether a view op raises, rather than copying, where its stride rule cannot view input 0 (`view`).
bool viewRaisesInstead(const OpSpec& op);
/// Whether torch's is_contiguous() is sure to hold for `value` in eager (valueGeometries knows it and
/// it is row-major). False where unsure.
bool provablyContiguous(const Graph& g, const OpCatalog& catalog, int value);
/// Turns every `view` that eager could not take of its input into `reshape` (same shape rule;
/// eager's .view raises on a layout it cannot view): where valueGeometries does not know input 0's
/// strides, or they do not allow the view; and gives an op that needs a dense input 0 (OpSpec::denseInput)
/// a `.contiguous()` copy of a node's value known to be laid out otherwise. Returns how many it changed.
int repairIllegalViews(Graph& g, const OpCatalog& catalog);
/// Resets to contiguous every input layout, and to plain draws every input's boundary values, that no
/// longer fit the input (repair or a shrinking pass changed its shape, dtype or distribution).
/// Returns how many it reset.
int dropInvalidLayouts(Graph& g);

/// The boundary-value kinds, each a key of GenPolicy::boundaryWeights.
const std::vector<std::string>& boundaryKinds();
/// Why `b` cannot apply to an input of type `t` drawn from `dist` ("" when it can): an unknown kind,
/// a share outside (0, 1], a non-floating dtype, or a distribution narrowed to an op's value domain
/// (boundary values would leave the domain the op needs).
std::string boundaryProblem(const BoundaryValues& b, const TensorType& t, const Distribution& dist);
/// Random boundary values for a floating input drawn from its default distribution: one or two kinds
/// drawn with `weights`, a share of 10%, 25% or 50%; empty when the input cannot take them.
BoundaryValues randomBoundary(const TensorType& t, const Distribution& dist, const std::map<std::string, double>& weights,
                              Rng& rng);
/// The Python helper make_inputs calls as boundary_values(x, g, share, kinds).
const char* boundaryValuesHelper();
nlohmann::json boundaryToJson(const BoundaryValues& b);
/// Parses {"kinds": [...], "share": s}; std::invalid_argument naming the fault.
BoundaryValues boundaryFromJson(const nlohmann::json& doc);

/// The JSON form ({"kind": ...} with only the fields the kind uses).
nlohmann::json layoutToJson(const Layout& layout);
/// Parses the JSON form; std::invalid_argument naming the fault (an unknown kind, a missing field).
Layout layoutFromJson(const nlohmann::json& doc);

}  // namespace tcfuzz::gen
