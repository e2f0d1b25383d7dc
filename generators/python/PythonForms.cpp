#include "generators/python/PythonForms.h"

#include <stdexcept>

#include "generators/ir/Graph.h"

namespace tcfuzz::gen {

namespace {

/// The submodule the container forms hold: a factor kept as a buffer, doubled in train().
constexpr std::string_view kScaleModule =
    "class Scale(nn.Module):  # a submodule: multiplies by its buffer `factor`, by twice that in train()\n"
    "    def __init__(self, factor):\n"
    "        super().__init__()\n"
    "        self.register_buffer(\"factor\", torch.tensor(factor))\n"
    "\n"
    "    def forward(self, t):\n"
    "        return t * (self.factor * 2 if self.training else self.factor)\n\n\n";

const std::vector<PythonForm> kForms{
    {"enumerate", true, false,
     "        parts = []\n"
     "        for i, part in enumerate($OUT.unbind(0)):  # a loop over dim 0 that fills a list\n"
     "            parts.append(part * (i % 3 + 1))\n"
     "        $OUT = torch.stack(parts)\n"},
    {"while", true, false,
     "        rows, parts, k = $OUT.unbind(0), [], 0\n"
     "        while k < len(rows):  # a while loop with a bounded trip count\n"
     "            parts.append(rows[k] * (k % 3 + 1))\n"
     "            k += 1\n"
     "        $OUT = torch.stack(parts)\n"},
    {"zip", true, false,
     "        weights = [float(k % 3 + 1) for k in range($OUT.shape[0])]\n"
     "        $OUT = torch.stack([row * w for row, w in zip($OUT.unbind(0), weights)])  # zip of dim 0 and a list\n"},
    {"generator", true, false,
     "        def scaled_rows(t):  # a generator function forward drains\n"
     "            for k, row in enumerate(t.unbind(0)):\n"
     "                yield row * (k % 2 + 1)\n"
     "\n"
     "        $OUT = torch.stack(list(scaled_rows($OUT)))\n"},
    {"grow-while-iterating", true, false,
     "        rows = list($OUT.unbind(0))\n"
     "        for row in rows:  # appends to the list it iterates, until the list is twice as long\n"
     "            if len(rows) < 2 * $OUT.shape[0]:\n"
     "                rows.append(row * 2)\n"
     "        $OUT = torch.stack(rows[$OUT.shape[0]:])\n"},
    {"closure", false, false,
     "        uses = 0\n"
     "\n"
     "        def bump(t):  # a nested function that rebinds forward's variable\n"
     "            nonlocal uses\n"
     "            uses += 1\n"
     "            return t * (uses + 1)\n"
     "\n"
     "        $OUT = bump(bump($OUT))\n"},
    {"dict", false, false,
     "        bag = {\"value\": $OUT, \"twice\": $OUT * 2}  # a dict built, then changed by pop, setitem and del\n"
     "        bag[\"half\"] = bag.pop(\"twice\") * 0.25\n"
     "        del bag[\"value\"]\n"
     "        $OUT = bag[\"half\"] * (len(bag) + 1)\n"},
    {"set", false, false,
     "        sizes = {d for d in $OUT.shape}  # a set of the output's sizes\n"
     "        sizes.discard(1)\n"
     "        $OUT = $OUT * (len(sizes) % 2 + 1)\n"},
    {"namedtuple", false, false,
     "        pair = Scaled($OUT, 2.0)  # a namedtuple, then a copy with one field replaced\n"
     "        pair = pair._replace(factor=pair.factor + 1.0)\n"
     "        $OUT = pair.value * pair.factor\n",
     "Scaled = collections.namedtuple(\"Scaled\", [\"value\", \"factor\"])\n\n\n", "", "import collections\n"},
    {"dataclass", false, false,
     "        carry = Carry($OUT)  # a dataclass instance, its fields changed in forward\n"
     "        carry.steps += 2\n"
     "        carry.value = carry.value * carry.steps\n"
     "        $OUT = carry.value\n",
     "@dataclasses.dataclass\n"
     "class Carry:  # a dataclass forward builds and changes\n"
     "    value: torch.Tensor\n"
     "    steps: int = 0\n\n\n",
     "", "import dataclasses\n"},
    {"local-class", false, false,
     "        class Scaler:  # a class defined in forward\n"
     "            def __init__(self, factor):\n"
     "                self.factor = factor\n"
     "\n"
     "            def __call__(self, t):\n"
     "                return t * self.factor\n"
     "\n"
     "        $OUT = Scaler(0.5)($OUT)\n"},
    {"no-grad", false, false,
     "        with torch.no_grad():  # a region autograd does not record: the sum's gradient flows through $OUT only\n"
     "            frozen = $OUT * 2\n"
     "        $OUT = $OUT + frozen\n"},
    {"tensor-hook", false, false,
     "        if $OUT.requires_grad:  # a gradient hook: doubles the gradient that reaches this value\n"
     "            $OUT.register_hook(lambda grad: grad * 2)\n"},
    {"closure-state", false, true,
     "        $OUT = TALLY($OUT)  # a module global's closure cell counts the calls\n",
     "def make_tally():\n"
     "    count = 0\n"
     "\n"
     "    def tally(t):  # rebinds its enclosing function's variable: a closure cell the oracle compares\n"
     "        nonlocal count\n"
     "        count += 1\n"
     "        return t * (count % 2 + 1)\n"
     "\n"
     "    return tally\n"
     "\n"
     "\n"
     "TALLY = make_tally()\n\n\n",
     "", "", "TALLY"},
    {"dict-state", false, true,
     "        self.cache = remember(self.cache, len(self.cache), tuple($OUT.shape))\n"
     "        $OUT = $OUT * (len(self.cache) % 2 + 1)  # an output that depends on the dict's length\n",
     "def remember(cache, key, value):  # mutates the dict it is passed (two entries at most) and returns it\n"
     "    cache[key] = value\n"
     "    if len(cache) > 2:\n"
     "        del cache[min(cache)]\n"
     "    return cache\n\n\n",
     "        self.cache = {}  # a dict forward passes to a helper that mutates it\n"},
    {"module-list", false, false,
     "        for block in self.blocks:  # an nn.ModuleList iterated\n"
     "            $OUT = block($OUT)\n",
     kScaleModule, "        self.blocks = nn.ModuleList([Scale(2.0), Scale(0.5), Scale(3.0)])\n", "", "", true},
    {"module-dict", false, false,
     "        for name, head in self.heads.items():  # an nn.ModuleDict iterated by name\n"
     "            if name != \"halve\":\n"
     "                $OUT = head($OUT)\n",
     kScaleModule, "        self.heads = nn.ModuleDict({\"twice\": Scale(2.0), \"halve\": Scale(0.5)})\n", "", "", true},
    {"sequential", false, false,
     "        $OUT = self.chain[-1](self.chain[:2]($OUT))  # an nn.Sequential, sliced and indexed\n",
     kScaleModule, "        self.chain = nn.Sequential(Scale(0.5), nn.Identity(), Scale(4.0))\n", "", "", true},
    {"print", false, false,
     "        print(\"forward:\", tuple($OUT.shape), $OUT.dtype)  # a print: a graph break\n", "", "", "", "", false, true},
    {"tolist", false, false,
     "        values = $OUT.tolist()  # back into Python lists: a graph break without capture_scalar_outputs\n"
     "        $OUT = $OUT * (len(values) % 2 + 1) if isinstance(values, list) else $OUT\n",
     "", "", "", "", false, true},
    // mul is on no CPU autocast list, so the values stay float32 (autocast's bfloat16 matmuls would leave the
    // float64 reference, which autocast never narrows, by bfloat16's rounding): what is tested is how Dynamo
    // and AOTAutograd carry the autocast state through the regions.
    {"autocast", false, false,
     "        with torch.autocast(\"cpu\", dtype=torch.bfloat16):  # an autocast region, and a region that turns it off\n"
     "            $OUT = $OUT * 2\n"
     "            with torch.autocast(\"cpu\", enabled=False):\n"
     "                $OUT = $OUT * 0.75\n"},
    // Data-dependent sizes: each doubles the positive elements through a tensor whose size only the data
    // decides (an unbacked size under capture_dynamic_output_shape_ops or capture_scalar_outputs, a graph break
    // without them). A mask that rounding flips near zero changes only an element near zero.
    {"nonzero", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_idx = (dd_flat > 0).nonzero().squeeze(1)  # the positive elements' positions: a data-dependent size\n"
     "        $OUT = dd_flat.index_put((dd_idx,), dd_flat[dd_idx] * 2).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"masked-select", false, false,
     "        dd_mask = $OUT > 0\n"
     "        dd_sel = $OUT.masked_select(dd_mask)  # the positive elements: a data-dependent size\n"
     "        $OUT = $OUT.masked_scatter(dd_mask, dd_sel * 2)\n",
     "", "", "", "", false, true, true},
    {"bool-mask", false, false,
     "        dd_mask = $OUT > 0\n"
     "        $OUT = $OUT.clone()\n"
     "        $OUT[dd_mask] = $OUT[dd_mask] * 2  # boolean-mask indexing: a data-dependent size\n",
     "", "", "", "", false, true, true},
    {"item-size", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_k = (dd_flat > 0).sum().item()  # .item() as a size: unbacked under capture_scalar_outputs\n"
     "        torch._check(dd_k >= 0)\n"
     "        torch._check(dd_k <= dd_flat.numel())\n"
     "        dd_top = dd_flat.argsort(descending=True)[:dd_k]  # the positive elements' positions\n"
     "        $OUT = dd_flat.index_put((dd_top,), dd_flat[dd_top] * 2).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"repeat-interleave", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_reps = (dd_flat > 0).long() + 1  # tensor repeats: a data-dependent size\n"
     "        dd_pos = torch.arange(dd_flat.numel(), device=dd_flat.device).repeat_interleave(dd_reps)\n"
     "        $OUT = torch.zeros_like(dd_flat).index_add(0, dd_pos, dd_flat[dd_pos]).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"unique", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_vals, dd_inv, dd_counts = torch.unique((dd_flat > 0).long(), sorted=True, return_inverse=True,\n"
     "                                                  return_counts=True)  # the classes present: a data-dependent size\n"
     "        dd_whole = dd_counts.sum() // dd_flat.numel()  # 1: the counts cover every element\n"
     "        $OUT = (dd_flat * (dd_vals[dd_inv] + dd_whole)).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"bincount", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_bins = torch.bincount((dd_flat > 0).long(), minlength=2)  # a count per class: a data-dependent size\n"
     "        $OUT = torch.where(dd_flat > 0, dd_flat * dd_bins.shape[0], dd_flat).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"searchsorted", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_zero = torch.zeros(1, dtype=dd_flat.dtype, device=dd_flat.device)\n"
     "        dd_k = torch.searchsorted(dd_flat.sort().values, dd_zero, right=True).item()  # how many are <= 0: a size\n"
     "        torch._check(dd_k >= 0)\n"
     "        torch._check(dd_k <= dd_flat.numel())\n"
     "        dd_top = dd_flat.argsort(stable=True)[dd_k:]  # the positive elements' positions\n"
     "        $OUT = dd_flat.index_put((dd_top,), dd_flat[dd_top] * 2).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
    {"tolist-size", false, false,
     "        dd_flat = $OUT.flatten()\n"
     "        dd_k = sum((dd_flat > 0).long().tolist())  # Python ints summed as a size: unbacked under capture_scalar_outputs\n"
     "        torch._check(dd_k >= 0)\n"
     "        torch._check(dd_k <= dd_flat.numel())\n"
     "        dd_top = dd_flat.argsort(descending=True, stable=True)[:dd_k]  # the positive elements' positions\n"
     "        $OUT = dd_flat.index_put((dd_top,), dd_flat[dd_top] * 2).view($OUT.shape)\n",
     "", "", "", "", false, true, true},
};

}  // namespace

const std::vector<PythonForm>& pythonForms() { return kForms; }

const PythonForm& pythonForm(const std::string& name) {
  for (const PythonForm& f : kForms)
    if (f.name == name) return f;
  throw std::invalid_argument("unknown Python form '" + name + "'");
}

std::string formForwardText(const PythonForm& form, const std::string& out) {
  std::string text(form.forward);
  for (size_t at = text.find("$OUT"); at != std::string::npos; at = text.find("$OUT", at + out.size()))
    text.replace(at, 4, out);
  return text;
}

}  // namespace tcfuzz::gen
