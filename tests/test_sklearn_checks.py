"""scikit-learn's estimator checks for MultiClassSVC (every machine, every solver, a bias, a
linear and a precomputed kernel, class weights) and for RadiusMarginSearch."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from msvm import MultiClassSVC
from msvm.model_selection import RadiusMarginSearch

ESTIMATORS = [
    MultiClassSVC(model="ww"),
    MultiClassSVC(model="cs"),
    MultiClassSVC(model="llw"),
    MultiClassSVC(model="msvm2"),
    MultiClassSVC(model="ww", fit_intercept=True),
    MultiClassSVC(model="cs", kernel="linear"),
    MultiClassSVC(model="ww", solver="frank_wolfe"),
    MultiClassSVC(model="ww", solver="online"),
    MultiClassSVC(model="ww", solver="cvxpy"),
    MultiClassSVC(model="ww", kernel="precomputed"),
    MultiClassSVC(model="ww", kernel="precomputed", fit_intercept=True),
    MultiClassSVC(model="ww", class_weight="balanced"),
    RadiusMarginSearch(param_grid={"C": [0.5, 2.0]}),
]


#: Why a check is expected to fail for an estimator of ESTIMATORS.
_TOLERANCE = (
    "An integer sample weight equals repeating the example at the optimum, but S2DO "
    "(with a bias: s2do_bias; with kernel='linear': the linear solver) "
    "stops at the KKT tolerance tol=1e-3, so the two fits' decision "
    "values differ by about tol (the check compares them to 1e-7); "
    "tests/test_weights.py runs this check at tol=1e-10, where it passes for every machine."
)

_ONE_PASS = (
    "solver='online' makes epochs=1 pass over the data by default, an approximation whose "
    "answer depends on the order and number of the rows it visits, so a repeated row is "
    "not a doubled weight; tests/test_weights.py runs this check with epochs=None (to "
    "convergence), where it passes."
)

_NO_BIAS_LINEAR = (
    "Without a bias the linear machine's class boundaries pass through the origin: on the "
    "check's blobs even the exact optimum (solver='cvxpy') predicts the class of weight "
    "1000 for only 54% (two classes) and 68% (three) of the test points, below the "
    "check's 87%; the class weights themselves are tested in tests/test_weights.py."
)

_NO_BIAS_NARROW = (
    "The check's Gram matrix is rbf_kernel with gamma=1/2 of unscaled blobs of std 20, "
    "nearly the identity: without a bias the scores of a test point far from every "
    "training point are about 0 and the class weight cannot move them, so the machine "
    "predicts the class of weight 1000 for 52% (two classes) and 56% (three) of them, "
    "below 87%; with fit_intercept=True (as SVC has) it passes."
)

_ZERO_WEIGHTS = (
    "RadiusMarginSearch refuses a zero sample weight (documented in fit): an example left "
    "out of training has no leave-one-out prediction of its own for the bound to count."
)

#: The solvers that stop at a KKT tolerance ('auto' resolves to one of them).
_KKT_TOLERANCE_SOLVERS = ("auto", "s2do", "s2do_bias", "linear")


def _expected_failures(estimator) -> dict:
    sample_weight_checks = ("check_sample_weight_equivalence_on_dense_data",
                            "check_sample_weight_equivalence_on_sparse_data")
    if isinstance(estimator, RadiusMarginSearch):
        return dict.fromkeys(sample_weight_checks, _ZERO_WEIGHTS)
    failures = {}
    if estimator.solver == "online":
        failures.update(dict.fromkeys(sample_weight_checks, _ONE_PASS))
    elif estimator.solver in _KKT_TOLERANCE_SOLVERS and estimator.tol >= 1e-8:
        # frank_wolfe (whose in-face Newton steps solve these 15 points exactly) and the
        # reference solvers pass it.
        failures.update(dict.fromkeys(sample_weight_checks, _TOLERANCE))
    if not estimator.fit_intercept and estimator.kernel == "linear":
        failures["check_class_weight_classifiers"] = _NO_BIAS_LINEAR
    if not estimator.fit_intercept and estimator.kernel == "precomputed":
        failures["check_class_weight_classifiers"] = _NO_BIAS_NARROW
    return failures


# Strict: a check listed above that passes fails the test, so no xfail outlives its cause.
# The strictness comes from pytest's xfail_strict = true (pyproject.toml), which the xfail
# marks follow on every supported scikit-learn: 1.6 and 1.7's parametrize_with_checks have no
# xfail_strict argument (added in 1.8, whose default None defers to that setting).
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)
