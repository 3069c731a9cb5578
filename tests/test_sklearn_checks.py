"""scikit-learn's estimator checks for MultiClassSVC (every machine, a bias, a linear kernel)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from msvm import MultiClassSVC

ESTIMATORS = [
    MultiClassSVC(model="ww"),
    MultiClassSVC(model="cs"),
    MultiClassSVC(model="llw"),
    MultiClassSVC(model="msvm2"),
    MultiClassSVC(model="ww", fit_intercept=True),
    MultiClassSVC(model="cs", kernel="linear"),
]


#: Why a check is expected to fail for an estimator of ESTIMATORS.
_TOLERANCE = (
    "An integer sample weight equals repeating the example at the optimum, but S2DO "
    "(with a bias: s2do_bias) "
    "stops at the KKT tolerance tol=1e-3, so the two fits' decision "
    "values differ by about tol (the check compares them to 1e-7); "
    "tests/test_weights.py runs this check at tol=1e-10, where it passes for every machine."
)


_NO_BIAS_LINEAR = (
    "Without a bias the linear machine's class boundaries pass through the origin: on the "
    "check's blobs even the exact optimum (solver='cvxpy') predicts the class of weight "
    "1000 for only 54% (two classes) and 68% (three) of the test points, below the "
    "check's 87%; the class weights themselves are tested in tests/test_weights.py."
)


def _expected_failures(estimator) -> dict:
    failures = {}
    if estimator.tol >= 1e-8:
        # With or without a bias: the default solvers (s2do, s2do_bias) both stop at the
        # KKT tolerance.  (solver='frank_wolfe', whose in-face Newton steps solve these 15
        # points exactly, passes it with a bias.)
        failures.update({"check_sample_weight_equivalence_on_dense_data": _TOLERANCE,
                         "check_sample_weight_equivalence_on_sparse_data": _TOLERANCE})
    if estimator.kernel == "linear" and not estimator.fit_intercept:
        failures["check_class_weight_classifiers"] = _NO_BIAS_LINEAR
    return failures


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)
