"""In-face steps of the Frank–Wolfe solver: conjugate gradients and Newton on the face of α.

Vertex steps alone converge slowly when the optimum lies inside a face of
high dimension (many free variables: the M-SVM², whose α are all positive,
or any machine at a large C).  So before each vertex step the solver
minimises J over the affine hull of the face of 𝒫 that contains α: the
variables at a bound are fixed, the free ones keep the bias rows and the
sums of their full slack groups.  The *face phase* (:meth:`Face.run`) runs
projected conjugate gradients on that face (at most :data:`CG_MAX` products
with H_FF, the projection subtracting group means and the bias rows'
component), or one equality-constrained Newton step [H_FF Eᵀ; E 0] (a dense
symmetric solve, LAPACK, faces of at most :data:`FACE_MAX` free variables)
— Newton first for the M-SVM² (strongly convex), CG first for the hinge
machines.  Every step is cut by the ratio test where the first free
variable meets a bound, which makes the face smaller; at most
:data:`FACE_CHAIN` face steps follow each other.

These are the in-face directions of Freund, Grigas & Mazumder (2017) with
exact minimisation over the face; a vertex step is still needed to leave a
face, and the Frank–Wolfe gap remains the certificate.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

#: Variables within SNAP·cap_i of a bound are on it: they define the face, and a
#: step puts them on it (LP round-off, drop steps).
SNAP = 1e-11
#: In-face Newton steps are skipped on faces with more free variables than this
#: (the dense solve grows with the cube of the face's size).
FACE_MAX = 3000
#: At most this many in-face steps in a row, each on a smaller face than the last.
FACE_CHAIN = 50
#: Conjugate-gradient steps per face before a Newton step is tried.
CG_MAX = 100
#: A Newton step the ratio test would cut below this fraction of its length is not taken.
NEWTON_MIN = 1e-2


class Face:
    """The minimal face of a working set's polytope containing α, and the steps on it.

    ``block`` is the working set (:class:`~msvm.solvers.frank_wolfe._working_set.Block`):
    its α and gradient change in place with every step (``block.step``, an
    exact line search); the face is read from α each time it is needed.
    ``n_steps`` counts the in-face steps taken.
    """

    def __init__(self, block):
        self.block = block
        self.n_steps = 0
        n, P = block.alpha.shape
        act = np.flatnonzero(block.active.ravel())
        self.act = act
        self.example = act // P
        key = self.example * P + block.group.ravel()[act]
        _, self.grp, counts = np.unique(key, return_inverse=True, return_counts=True)
        self.n_grp = len(counts)
        self.shared = counts[self.grp] > 1  # the variable's slack group has several slots
        self.grp_example = np.zeros(self.n_grp, dtype=np.intp)  # each group's example
        self.grp_example[self.grp] = self.example
        nu = block.nu.reshape(-1, block.nu.shape[2])[act]  # (n_act, Q)
        self.nu = nu
        self.nuU = None if block.nuU is None else block.nuU.reshape(-1, block.nuU.shape[2])[act]

    def classify(self):
        """(α on the active slots, slack-group sums, full groups, free variables)."""
        b = self.block
        x = b.alpha.ravel()[self.act]
        cap = b.cap[self.example]   # each variable's capacity (its example's)
        cap_grp = b.cap[self.grp_example]
        snap = SNAP * cap
        sums = np.bincount(self.grp, weights=x, minlength=self.n_grp)
        # An infinite capacity (C·w overflowing) gives inf − inf = NaN, which compares
        # False: never full, never at its cap, as it should be; without the warning.
        with np.errstate(invalid="ignore"):
            full = sums >= cap_grp - SNAP * cap_grp * 10
            at_cap = ~self.shared & (x >= cap - snap)
        at_zero = x <= snap
        if b.squared:
            full[:] = False
        free = ~at_zero & ~at_cap
        return x, sums, full, free

    def direction(self):
        """(d, θ_max): the Newton direction on the face and its largest feasible step."""
        b = self.block
        x, sums, full, free = self.classify()
        F = np.flatnonzero(free)
        nF = len(F)
        if nF == 0 or nF > FACE_MAX:
            return None, 0.0
        ex = self.example[F]
        K = b.K[np.ix_(ex, ex)]
        if np.any(b.shift):
            K = K + b.shift[ex][:, None] * (ex[:, None] == ex[None, :])
        H = (self.nu[F] @ self.nu[F].T) * K
        rows = []
        if self.nuU is not None:
            rows.append(self.nuU[F].T)
        full_groups = np.flatnonzero(full)
        if len(full_groups):
            member = self.grp[F][None, :] == full_groups[:, None]
            rows.append(member[member.any(axis=1)].astype(float))
        E = np.vstack(rows) if rows else np.zeros((0, nF))
        g = b.g.ravel()[self.act[F]]
        dF = newton_on_face(H, E, g)
        if dF is None or not np.any(dF):
            return None, 0.0
        theta_max = self.ratio(x, sums, full, F, dF)
        d = np.zeros(b.alpha.size)
        d[self.act[F]] = dF
        return d.reshape(b.alpha.shape), theta_max

    def ratio(self, x, sums, full, F, dF) -> float:
        """Largest θ keeping α + θd in the polytope (d = dF on the free variables F)."""
        b = self.block
        theta_max = np.inf
        neg = dF < 0
        if np.any(neg):
            theta_max = min(theta_max, float(np.min(x[F][neg] / -dF[neg])))
        up = (dF > 0) if b.squared else (~self.shared[F] & (dF > 0))
        if np.any(up):
            cap = b.cap[self.example[F][up]]
            theta_max = min(theta_max, float(np.min((cap - x[F][up]) / dF[up])))
        if not b.squared:
            dsum = np.bincount(self.grp[F], weights=dF * self.shared[F], minlength=self.n_grp)
            grow = (dsum > 0) & ~full
            if np.any(grow):
                cap = b.cap[self.grp_example[grow]]
                theta_max = min(theta_max, float(np.min((cap - sums[grow]) / dsum[grow])))
        return max(theta_max, 0.0) if np.isfinite(theta_max) else 1.0

    def projector(self, F, full):
        """v ↦ the projection of v (on the free variables F) onto the face's directions.

        The directions keep the sums of full slack groups (rows of ones on
        disjoint variables: subtract the group mean) and the bias rows A_F
        (then P = P_G − Aᵀ(AAᵀ)⁺A with A = A_F P_G).
        """
        grp = self.grp[F]
        in_full = full[grp]
        counts = np.bincount(grp[in_full], minlength=self.n_grp)

        def project_groups(v):
            if not np.any(in_full):
                return v
            means = np.bincount(grp[in_full], weights=v[in_full], minlength=self.n_grp)
            out = v.copy()
            out[in_full] -= means[grp[in_full]] / counts[grp[in_full]]
            return out

        if self.nuU is None:
            return project_groups
        A = np.array([project_groups(row) for row in self.nuU[F].T])
        pinv = np.linalg.pinv(A @ A.T, rcond=1e-10)

        def project(v):
            v = project_groups(v)
            return v - A.T @ (pinv @ (A @ v))

        return project

    def newton_step(self) -> tuple[str, int]:
        """One Newton step on the face of α (:func:`newton_on_face`).

        Returns (state, steps): ``'converged'`` (the face's minimiser was
        reached), ``'bound'`` (the ratio test cut the step: a variable met a
        bound and the face is smaller) or ``'failed'`` (no step taken: a
        singular face, or a step the ratio test would cut below
        ``NEWTON_MIN`` of its length).
        """
        d, theta_max = self.direction()
        if d is None or theta_max < NEWTON_MIN:
            return "failed", 0
        self.n_steps += 1
        # θ = 1 is the face's minimiser; a longer step would only follow round-off
        # (a nearly flat direction the solve did not flag as singular).
        theta = self.block.step(d, min(theta_max, 1.0))
        return ("bound" if theta >= theta_max and theta_max < 1.0 else "converged"), 1

    def cg_phase(self, max_iter: int) -> tuple[str, int]:
        """Conjugate gradients on the face of α, each step an exact line search.

        Returns (state, steps): ``'converged'`` (projected gradient at
        round-off level), ``'bound'`` (a step was cut by the ratio test: the
        face has changed) or ``'budget'`` (``max_iter`` steps taken).
        """
        b = self.block
        x, sums, full, free = self.classify()
        F = np.flatnonzero(free)
        if len(F) == 0:
            return "converged", 0
        idx = self.act[F]
        project = self.projector(F, full)
        gF = b.g.ravel()[idx]
        r = project(gF)
        rr = float(r @ r)
        # Converged when the projected gradient is round-off: relative to itself at
        # the start, or to the gradient (a projection of a vector cancels to ~1e-16 of it).
        tiny = max(1e-24 * rr, 1e-26 * float(gF @ gF), 1e-300)
        p = -r
        d = np.zeros(b.alpha.size)
        for k in range(max_iter):
            if rr <= tiny:
                return "converged", k
            x = b.alpha.ravel()[self.act]
            sums = np.bincount(self.grp, weights=x, minlength=self.n_grp)
            theta_max = self.ratio(x, sums, full, F, p)
            d[idx] = p
            theta = b.step(d.reshape(b.alpha.shape), theta_max)
            self.n_steps += 1
            if theta <= 0.0:
                # θ_max = 0: a free variable of F was snapped onto its bound by the last
                # step (Block.step), so the face is smaller, not minimised.
                return ("bound" if theta_max <= 0.0 else "converged"), k + 1
            if theta >= theta_max:
                return "bound", k + 1
            r = project(b.g.ravel()[idx])
            rr_new = float(r @ r)
            # Re-projected: round-off outside the face's directions would grow with β.
            p = project(-r + (rr_new / rr) * p)
            rr = rr_new
        return "budget", max_iter

    def run(self, max_steps: int) -> int:
        """Minimise over the face of α, then over the smaller faces the ratio test leads to.

        The M-SVM²'s faces are strongly convex (the diagonal 1/(2C)) and get
        Newton steps; the hinge-loss machines' faces are often singular or
        badly conditioned (low-rank or near-duplicate kernels), where a Newton
        step is useless or cut at once, and get conjugate gradients, with a
        Newton step when they stall.  Returns the number of steps taken.
        """
        steps = 0
        for _ in range(FACE_CHAIN):
            if self.block.squared:
                state, taken = self.newton_step()
                if state == "failed":
                    state, more = self.cg_phase(CG_MAX)
                    taken += more
            else:
                state, taken = self.cg_phase(CG_MAX)
                if state == "budget":
                    state, more = self.newton_step()
                    taken += more
            steps += taken
            if state != "bound" or steps >= max_steps:
                break
        return steps


def newton_on_face(H: np.ndarray, E: np.ndarray, g: np.ndarray):
    """d minimising gᵀd + ½ dᵀHd subject to E d = 0, or None if that system is singular.

    One dense symmetric solve of the KKT system [[H, Eᵀ], [E, 0]] [d; μ] =
    [−g; 0].  A singular system (a low-rank kernel, dependent rows) has no
    Newton step worth taking: J is flat or unbounded along some directions of
    the face, and the caller takes conjugate-gradient steps instead.
    """
    nF, nE = H.shape[0], E.shape[0]
    kkt = np.zeros((nF + nE, nF + nE))
    kkt[:nF, :nF] = H
    kkt[:nF, nF:] = E.T
    kkt[nF:, :nF] = E
    rhs = np.concatenate([-g, np.zeros(nE)])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            sol = scipy.linalg.solve(kkt, rhs, assume_a="sym", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning, ValueError):
        return None
    d = sol[:nF]
    return d if np.all(np.isfinite(d)) else None
