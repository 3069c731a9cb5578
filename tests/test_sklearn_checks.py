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


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)
