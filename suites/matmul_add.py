"""The matmul_add suite: square y = x @ w + b over M = N = K = each of `suite.sizes`."""
from suites.catalog import SuiteDef, positive_int
from suites.errors import ConfigError


def square_shapes(sizes) -> list[dict[str, int]]:
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise ConfigError(f"suite.sizes: expected a non-empty list of sizes, e.g. "
                          f"suite.sizes=[64,256,1024], got {sizes!r}")
    return [{"M": n, "N": n, "K": n} for n in (positive_int(s, "suite.sizes") for s in sizes)]


SUITE = SuiteDef(
    name="matmul_add",
    op="matmul_add",
    shape_key="sizes",
    size_axis="M",
    expand=square_shapes,
    describe="y = x @ w + b, square M = N = K: the series' torch.add(torch.matmul(x, w), b)",
)
