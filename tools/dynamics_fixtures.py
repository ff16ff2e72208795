#!/usr/bin/env python3
"""Reference dynamics from Pinocchio for crates/dynamics' tests.

Builds the same multi-body models in Pinocchio (PyPI `pin`) and evaluates, at
seeded random states, the mass matrix M(q), the bias forces C(q, v) (gravity,
Coriolis, centrifugal), the gravity forces G(q), inverse dynamics
tau = M a + C and the world Jacobians of three joints. Writes one JSON fixture per model into
crates/dynamics/tests/fixtures/, which `cargo test -p dynamics` compares with
our CRBA/RNEA at 1e-9 relative error, so the tests need no Python.

Models:
  arm6, arm7  assets/robots/*.urdf, parsed by Pinocchio itself
              (pin.buildModelFromUrdf); our velocity order is matched by name.
  branchy     crates/dynamics/tests/fixtures/branchy.urdf, the same way: rotated
              joint origins and inertials, full tensors, unaligned axes, a
              prismatic joint, a branch and a welded link with mass.
  human       skeleton::presets::human() (free root, swing-twist balls,
              2-DOF swings, hinges), from the JSON description our crate
              writes (examples/dynamics_export.rs, dynamics::export).
  cmu         the 96-DOF CMU BVH skeleton (Euler balls) with Dempster
              masses and a 1e-3 armature, from the same JSON export.
  hand        skeleton::presets::hand() (swing-twist root fixed in space,
              swings, hinges), same export.
  rtpf        skeleton::presets::rtpf_upper_body() (prismatic root chain,
              Euler balls, hinges), same export.

Pinocchio has no exp-map swing joint. A swing joint is modelled as a
spherical joint whose body angular velocity is constrained to
w = G(p) pdot, G(p) = Jexp3(p0 u + p1 w) [u w] (Pinocchio's own right
Jacobian of exp3); our 2-DOF quantities are the projections
M = P^T M_pin P, C = P^T rnea(q, P v, Pdot v), tau = P^T rnea(q, P v, P a + Pdot v),
with P the block map (identity for every other joint) and Pdot v by a
Richardson-extrapolated central difference of G along pdot.

Usage (from the repository root):
    pip install pin==4.1.0 numpy
    python3 tools/dynamics_fixtures.py            # runs the export example first
    python3 tools/dynamics_fixtures.py --bench DIR   # used by dynamics_bench --pinocchio
"""

import argparse
import json
import pathlib
import subprocess
import tempfile

import numpy as np
import pinocchio as pin

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "crates" / "dynamics" / "tests" / "fixtures"
GRAVITY = 9.80665
SEED = 20261123


def axis_rotation(axis, angle):
    return pin.exp3(np.asarray(axis, dtype=float) * angle)


def ball_rotation(rot, p):
    """Rotation of a ball/free joint's three rotation parameters (see
    dynamics::export for the conventions)."""
    kind = rot["type"]
    if kind == "expmap":
        return pin.exp3(np.asarray(p))
    if kind == "euler":
        axes = {"X": [1, 0, 0], "Y": [0, 1, 0], "Z": [0, 0, 1]}
        r = np.eye(3)
        for a, angle in zip(rot["order"], p):
            r = r @ axis_rotation(axes[a], angle)
        return r
    if kind == "swing_twist":
        s = p[0] * np.asarray(rot["u"]) + p[1] * np.asarray(rot["w"])
        return pin.exp3(s) @ axis_rotation(rot["t"], p[2])
    raise ValueError(f"unknown rotation type {kind}")


def swing_g(body, p):
    u, w = np.asarray(body["joint"]["u"]), np.asarray(body["joint"]["w"])
    return pin.Jexp3(p[0] * u + p[1] * w) @ np.column_stack([u, w])


def quat_xyzw(r):
    return pin.Quaternion(r).coeffs()


class JsonModel:
    """A Pinocchio model rebuilt from dynamics::export's JSON."""

    def __init__(self, desc):
        self.desc = desc
        self.nv = desc["nv"]
        m = pin.Model()
        m.gravity.linear = np.asarray(desc["gravity"])
        # Pinocchio's CRBA assumes each subtree's velocities are contiguous:
        # add the joints depth-first (our order is only topological).
        bodies = desc["bodies"]
        children = {i: [] for i in range(-1, len(bodies))}
        for i, b in enumerate(bodies):
            children[b["parent"]].append(i)
        order, stack = [], list(reversed(children[-1]))
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(children[i]))
        self.jids = [None] * len(bodies)
        for index in order:
            b = bodies[index]
            parent = 0 if b["parent"] < 0 else self.jids[b["parent"]]
            placement = pin.SE3(
                np.asarray(b["placement"]["R"]).reshape(3, 3),
                np.asarray(b["placement"]["p"]),
            )
            kind = b["joint"]["type"]
            if kind == "revolute":
                jm = pin.JointModelRevoluteUnaligned(np.asarray(b["joint"]["axis"]))
            elif kind == "prismatic":
                jm = pin.JointModelPrismaticUnaligned(np.asarray(b["joint"]["axis"]))
            elif kind in ("spherical", "swing"):
                jm = pin.JointModelSpherical()
            elif kind == "freeflyer":
                jm = pin.JointModelFreeFlyer()
            else:
                raise ValueError(kind)
            jid = m.addJoint(parent, jm, placement, b["name"])
            self.jids[index] = jid
            inertia = b["inertia"]
            m.appendBodyToJoint(
                jid,
                pin.Inertia(
                    inertia["mass"],
                    np.asarray(inertia["com"]),
                    np.asarray(inertia["I_com"]).reshape(3, 3),
                ),
                pin.SE3.Identity(),
            )
        armature = np.zeros(m.nv)
        for b, jid in zip(desc["bodies"], self.jids):
            a = np.asarray(b["armature"])
            if b["joint"]["type"] == "swing":
                assert not a.any(), "armature on a swing joint is not mapped"
                continue
            j = m.joints[jid]
            armature[j.idx_v : j.idx_v + j.nv] = a
        m.armature = armature
        self.model = m
        self.data = m.createData()

    def maps(self, q, v):
        """Pinocchio configuration, P and Pdot v at our (q, v)."""
        m = self.model
        qp = np.zeros(m.nq)
        p_map = np.zeros((m.nv, self.nv))
        pdot_v = np.zeros(m.nv)
        for b, jid in zip(self.desc["bodies"], self.jids):
            j = m.joints[jid]
            i, n = b["idx_v"], b["nv"]
            p = q[i : i + n]
            kind = b["joint"]["type"]
            if kind in ("revolute", "prismatic"):
                qp[j.idx_q] = p[0]
                p_map[j.idx_v, i] = 1.0
            elif kind == "spherical":
                qp[j.idx_q : j.idx_q + 4] = quat_xyzw(ball_rotation(b["rotation"], p))
                p_map[j.idx_v : j.idx_v + 3, i : i + 3] = np.eye(3)
            elif kind == "freeflyer":
                qp[j.idx_q : j.idx_q + 3] = p[:3]
                qp[j.idx_q + 3 : j.idx_q + 7] = quat_xyzw(ball_rotation(b["rotation"], p[3:]))
                p_map[j.idx_v : j.idx_v + 6, i : i + 6] = np.eye(6)
            elif kind == "swing":
                u, w = np.asarray(b["joint"]["u"]), np.asarray(b["joint"]["w"])
                qp[j.idx_q : j.idx_q + 4] = quat_xyzw(pin.exp3(p[0] * u + p[1] * w))
                p_map[j.idx_v : j.idx_v + 3, i : i + 2] = swing_g(b, p)
                pd = v[i : i + 2]

                def diff(h):
                    return (swing_g(b, p + h * pd) - swing_g(b, p - h * pd)) @ pd / (2 * h)

                h = 1e-3
                pdot_v[j.idx_v : j.idx_v + 3] = (4 * diff(h / 2) - diff(h)) / 3
        return qp, p_map, pdot_v

    def evaluate(self, q, v, a):
        qp, pm, pdv = self.maps(q, v)
        m, d = self.model, self.data
        mass = pin.crba(m, d, qp).copy()
        mass = np.triu(mass) + np.triu(mass, 1).T
        vp = pm @ v
        c = pm.T @ pin.rnea(m, d, qp, vp, pdv)
        tau = pm.T @ pin.rnea(m, d, qp, vp, pm @ a + pdv)
        g = pm.T @ pin.computeGeneralizedGravity(m, d, qp)
        return pm.T @ mass @ pm, c, tau, g

    def jacobians(self, q, v, names):
        """6 x nv joint Jacobians (linear velocity of the joint origin, then
        angular velocity, world axes) in our velocity coordinates."""
        qp, pm, _ = self.maps(q, v)
        m, d = self.model, self.data
        pin.computeJointJacobians(m, d, qp)
        out = {}
        for name in names:
            jid = m.getJointId(name)
            out[name] = pin.getJointJacobian(m, d, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED) @ pm
        return out

    def probe_joints(self):
        return [b["name"] for b in self.desc["bodies"][-3:]]


class UrdfModel:
    """A URDF parsed by Pinocchio; our velocity order from our export."""

    def __init__(self, urdf, desc):
        m = pin.buildModelFromUrdf(str(urdf))
        m.gravity.linear = np.array([0.0, 0.0, -GRAVITY])
        self.model, self.data = m, m.createData()
        self.nv = desc["nv"]
        self.perm = np.zeros(self.nv, dtype=int)  # ours -> pinocchio
        self.qmap = []  # (our index, pinocchio idx_q, pinocchio nq)
        self.names = [b["name"] for b in desc["bodies"]]
        for b in desc["bodies"]:
            jid = m.getJointId(b["name"])
            assert jid < m.njoints, f"no joint {b['name']} in {urdf}"
            j = m.joints[jid]
            assert j.nv == b["nv"] == 1, "only 1-DOF URDF joints are mapped"
            self.perm[b["idx_v"]] = j.idx_v
            self.qmap.append((b["idx_v"], j.idx_q, j.nq))

    def evaluate(self, q, v, a):
        m, d = self.model, self.data
        vp, ap = np.zeros(m.nv), np.zeros(m.nv)
        vp[self.perm], ap[self.perm] = v, a
        # A continuous joint is (cos θ, sin θ) in Pinocchio's configuration.
        qp = self.config(q)
        mass = pin.crba(m, d, qp).copy()
        mass = np.triu(mass) + np.triu(mass, 1).T
        ix = np.ix_(self.perm, self.perm)
        c = pin.rnea(m, d, qp, vp, np.zeros(m.nv))[self.perm]
        tau = pin.rnea(m, d, qp, vp, ap)[self.perm]
        g = pin.computeGeneralizedGravity(m, d, qp)[self.perm]
        return mass[ix], c, tau, g

    def config(self, q):
        qp = np.zeros(self.model.nq)
        for i, iq, nq in self.qmap:
            qp[iq : iq + nq] = [q[i]] if nq == 1 else [np.cos(q[i]), np.sin(q[i])]
        return qp

    def jacobians(self, q, v, names):
        m, d = self.model, self.data
        pin.computeJointJacobians(m, d, self.config(q))
        return {
            name: pin.getJointJacobian(m, d, m.getJointId(name), pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:, self.perm]
            for name in names
        }

    def probe_joints(self):
        return self.names[-3:]


def export_models(out):
    subprocess.run(
        ["cargo", "run", "--quiet", "-p", "dynamics", "--example", "dynamics_export", "--", str(out)],
        cwd=ROOT,
        check=True,
    )
    names = ("human", "cmu", "hand", "rtpf", "arm6", "arm7", "branchy")
    return {name: json.loads((out / f"{name}.json").read_text()) for name in names}


def fixture(name, ref, samples, rng):
    rows = []
    for _ in range(samples):
        n = ref.nv
        q = rng.uniform(-1.2, 1.2, n)
        v = rng.uniform(-2.0, 2.0, n)
        a = rng.uniform(-3.0, 3.0, n)
        mass, c, tau, g = ref.evaluate(q, v, a)
        # Our own consistency: RNEA = M a + C in Pinocchio too.
        assert np.allclose(tau, mass @ a + c, rtol=1e-10, atol=1e-9), name
        iu = np.triu_indices(n)
        jac = ref.jacobians(q, v, ref.probe_joints())
        rows.append(
            {
                "q": q.tolist(),
                "v": v.tolist(),
                "a": a.tolist(),
                "M_upper": mass[iu].tolist(),
                "C": c.tolist(),
                "tau": tau.tolist(),
                "G": g.tolist(),
                "jacobians": [{"joint": k, "J": j.reshape(-1).tolist()} for k, j in jac.items()],
            }
        )
    return {
        "model": name,
        "reference": f"pinocchio {pin.__version__}",
        "generator": "tools/dynamics_fixtures.py",
        "seed": SEED,
        "nv": ref.nv,
        "M_layout": "upper triangle with diagonal, row by row",
        "J_layout": "6 x nv row by row: linear velocity of the joint origin, then angular velocity, world axes",
        "samples": rows,
    }


def best_us(f, reps=500, batches=101):
    import time

    for _ in range(reps):
        f()
    means = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        means.append((time.perf_counter() - t) * 1e6 / reps)
    return min(means)  # the batch least disturbed by other processes


def bench(directory):
    """Times pin.crba and pin.nle on the models exported into `directory`
    (dynamics_bench --pinocchio writes them) and the binding overhead of one
    call on a 1-DOF model; prints "name crba_us nle_us aba_us overhead_us"."""
    tiny = pin.Model()
    jid = tiny.addJoint(0, pin.JointModelRX(), pin.SE3.Identity(), "j")
    tiny.appendBodyToJoint(jid, pin.Inertia.Random(), pin.SE3.Identity())
    td = tiny.createData()
    tq, tv = pin.neutral(tiny), np.zeros(1)
    overhead = min(best_us(lambda: pin.crba(tiny, td, tq)), best_us(lambda: pin.nle(tiny, td, tq, tv)))
    rng = np.random.default_rng(11)
    for path in sorted(pathlib.Path(directory).glob("*.json")):
        ref = JsonModel(json.loads(path.read_text()))
        q = rng.uniform(-1.0, 1.0, ref.nv)
        v = rng.uniform(-1.0, 1.0, ref.nv)
        qp, pm, _ = ref.maps(q, v)
        vp = pm @ v
        m, d = ref.model, ref.data
        tau = rng.uniform(-1.0, 1.0, m.nv)
        crba = best_us(lambda: pin.crba(m, d, qp))
        nle = best_us(lambda: pin.nle(m, d, qp, vp))
        aba = best_us(lambda: pin.aba(m, d, qp, vp, tau))
        print(f"{path.stem} {crba:.4f} {nle:.4f} {aba:.4f} {overhead:.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=FIXTURES)
    parser.add_argument("--bench", type=pathlib.Path, metavar="DIR", help="time Pinocchio on the models in DIR")
    args = parser.parse_args()
    if args.bench:
        bench(args.bench)
        return
    with tempfile.TemporaryDirectory() as tmp:
        descs = export_models(pathlib.Path(tmp))
    rng = np.random.default_rng(SEED)
    refs = {
        "arm6": (UrdfModel(ROOT / "assets/robots/arm6.urdf", descs["arm6"]), 5),
        "arm7": (UrdfModel(ROOT / "assets/robots/arm7.urdf", descs["arm7"]), 5),
        "branchy": (UrdfModel(FIXTURES / "branchy.urdf", descs["branchy"]), 5),
        "human": (JsonModel(descs["human"]), 3),
        "cmu": (JsonModel(descs["cmu"]), 2),
        "hand": (JsonModel(descs["hand"]), 3),
        "rtpf": (JsonModel(descs["rtpf"]), 3),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (ref, samples) in refs.items():
        data = fixture(name, ref, samples, rng)
        path = args.out / f"{name}.json"
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"{path.relative_to(ROOT)}: nv = {ref.nv}, {samples} samples")


if __name__ == "__main__":
    main()
