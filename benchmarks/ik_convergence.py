"""IK convergence on uniformly sampled reachable, collision-free targets, from
home and from random starts, driven through ``IkLoop`` as the ``ik`` node
drives it.

Targets: both arms' joints drawn uniformly over their ranges at a random lift
height, kept when every proxy pair the IK checks is at least
``--target-clearance`` apart and both grips lie inside the workspace limits
(so the node does not move them); the grip poses of that configuration are the
targets, reachable by construction. Starts: home, or another such random
configuration. Targets are sent at 90 Hz for ``--max-s`` seconds (the node's
Cartesian speed caps apply); a trial converges when both grips are within
1 mm and 0.01 rad. Motion continuity is checked on every solve: no joint may
move faster than the joint speed cap over the solve's step. Prints the
fraction converged, the time it took (percentiles), how many trials used the
global fallback, the largest joint speed seen and the CPU time of each solve
(the tick with the search iterations it runs; process CPU time, so a shared
machine inflates it less than wall time).

    python benchmarks/ik_convergence.py [--targets 200] [--max-s 6] [--starts home random] [--no-fallback] [--explain]
                                        [--search-iterations N] [--route-checks N] [--search-seed N]
                                        [--region-samples N] [--uniform-guard]

``--explain`` lists, for every trial that did not converge, each arm that
missed: its final error, what the global fallback was doing (in goal mode
away from the target or at it but turned, and whether that goal's route was
checked clear or it was engaged, last, without one; searching; or inside the
stall limit where no search starts) and the checked proxy pairs within 13 mm
that hold it. ``--census SEEDS`` adds, per missing arm, how many distinct
solutions SEEDS seeds find for its target and how many of those have a
clear straight or through-home route from the start posture (far more
search than the fallback's budget: a ceiling for a better search).
``--connectivity CHECKS`` adds, per missing arm, whether a route search
(RRT-Connect, CHECKS clearance checks) joins its start to the configuration
its target was sampled from through postures clear of the arm's own links,
mount, carriage and column: a target whose sampled configuration lies in
another connected piece of the arm's free space may have no solution the
arm can move to without passing through itself (not joined is evidence, not
proof). ``--route-checks N`` sets the fallback's own route search budget
(``global_search.route_search_checks``); ``--search-seed N`` the search's
random stream (``global_search.rng_seed``): the same targets with another
stream show how far a difference between two settings is chance.
``--uniform-guard`` makes the collision guard shorten both arms' steps by
one fraction, as before each arm was shortened on its own
(``BimanualIk._guard_each_arm``), to compare the two on the same targets.

    python benchmarks/ik_convergence.py --explain --connectivity 20000

``--region-samples N`` first builds, per arm, a roadmap of N clear samples of
its free joint space (``operators/ik/free_space_roadmap.py``; its own links,
mount, carriage and column kept the IK's minimum distance apart) and draws
targets and random starts only where every arm's joints lie in the region
that holds home: the postures the arm can reach from home at all without
passing through the robot. It prints the regions' sizes and the share of
uniform draws kept. Same region is proven (the roadmap holds a checked route);
another region is what this many samples found, not a proof.

    python benchmarks/ik_convergence.py --region-samples 6000

With both ``--census`` and ``--connectivity`` it also prints the convergence
over the trials left when those are set aside where some missing arm has no
route found to any configuration that reaches its target (the sampled one
or a census solution): a search with a larger budget or more seeds could
still find one, so that figure leans optimistic.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ik_node_driver import NodeDriver, arm_targets, ik_config, make_loop, restart  # noqa: E402

from teledora.operators.geometry import quat_angle  # noqa: E402
from teledora.operators.ik.arm_roadmap import own_space_check  # noqa: E402
from teledora.operators.ik.free_space_roadmap import FreeSpaceRoadmap  # noqa: E402
from teledora.operators.ik.global_search import _pose_error, own_pair_indices  # noqa: E402
from teledora.operators.ik.ik_solver import BimanualIk  # noqa: E402
from teledora.operators.ik.ik_loop import IkLoop  # noqa: E402
from teledora.operators.ik.route_planner import RoutePlanner  # noqa: E402
from teledora.operators.model.sides import SIDES  # noqa: E402

POS_TOL_M = 1e-3
ORI_TOL_RAD = 0.01


def random_configuration(loop: IkLoop, rng: np.random.Generator, clearance: float, lift_height_m: float) -> np.ndarray:
    """Uniform arm joints (IK order) that are clear of every checked pair by
    ``clearance`` and put both grips inside the workspace limits."""
    ik = loop.ik
    lo, hi = ik.reference.lower_inner, ik.reference.upper_inner
    lift = loop.profile.lift_height_to_joint(lift_height_m)
    while True:
        q = rng.uniform(lo, hi)
        ik.reset(q, lift_joint=lift)
        if ik.min_proxy_distance(distmax=clearance) < clearance:
            continue
        if all(loop.limits.contains(s, ik.grip_pose(s).position) for s in SIDES):
            return q


def arm_roadmaps(loop: IkLoop, samples: int, seed: int = 0) -> dict[str, FreeSpaceRoadmap]:
    """Per arm, a roadmap of its free joint space (its own links, mount, the
    carriage and the column kept the IK's minimum distance apart: the pairs
    no other joint moves), home among its nodes."""
    ik, fb = loop.ik, loop.ik.fallback
    clearance = float(ik_config()["collision"]["minimum_distance_m"])
    home = np.array([loop.profile.home_q()[n] for n in ik.arm_joint_names])
    ik.reset(home)
    out = {}
    for side in SIDES:
        idx = fb.index[side]
        check = own_space_check(ik, side, own_pair_indices(ik, side), clearance)
        out[side] = FreeSpaceRoadmap(fb.lower[idx], fb.upper[idx], check,
                                     np.random.default_rng([seed, len(out)]), samples=samples, anchors=[home[idx]])
    return out


def in_home_region(loop: IkLoop, roadmaps: dict[str, FreeSpaceRoadmap], q: np.ndarray) -> bool:
    """Whether each arm's joints of ``q`` lie in the region of the arm's roadmap that holds home."""
    fb = loop.ik.fallback
    return all(rm.region(q[fb.index[s]]) == rm.node_regions()[0] for s, rm in roadmaps.items())


def make_trials(loop: IkLoop, n: int, seed: int, clearance: float,
                roadmaps: dict[str, FreeSpaceRoadmap] | None = None) -> list[dict]:
    """``n`` trials (target and random start at one lift height). With
    ``roadmaps``, targets and starts are redrawn until every arm's joints lie
    in home's region of free space (the postures reachable from home without
    passing through the robot; ``counts`` of the first trial says how many
    draws were set aside)."""
    rng = np.random.default_rng(seed)
    travel = loop.profile.lift.travel_mm / 1000.0
    ik = loop.ik
    trials = []
    drawn = 0
    for _ in range(n):
        lift = float(rng.uniform(0.0, travel))
        while True:
            q_target = random_configuration(loop, rng, clearance, lift)
            drawn += 1
            if roadmaps is None or in_home_region(loop, roadmaps, q_target):
                break
        ik.reset(q_target, lift_joint=loop.profile.lift_height_to_joint(lift))
        goal = {s: ik.grip_pose(s) for s in SIDES}
        while True:
            q_start = random_configuration(loop, rng, clearance, lift)
            drawn += 1
            if roadmaps is None or in_home_region(loop, roadmaps, q_start):
                break
        trials.append({"lift": lift, "goal": goal, "q_start": q_start, "q_target": q_target})
    if trials:
        trials[0]["counts"] = {"drawn": drawn, "kept": 2 * n}
    return trials


def run_trial(loop: IkLoop, trial: dict, start: str, max_s: float, census: int = 0, index: int = 0,
              connectivity: int = 0) -> dict:
    ik = loop.ik
    names = ik.arm_joint_names
    q0 = loop.profile.home_q() if start == "home" else dict(zip(names, trial["q_start"]))
    driver = NodeDriver(loop, q0, trial["lift"])
    msg = arm_targets(loop.profile, trial["goal"])
    engaged0 = ik.fallback.goals_engaged if ik.fallback else 0
    state = {"t": None, "max_speed": 0.0, "last": None, "cpu_ns": []}

    class Done(Exception):
        pass

    def on_solve(solve) -> None:
        cmd = solve.command
        state["cpu_ns"].append(solve.cpu_ns)
        q = np.array(cmd["q_ref"], dtype=float)
        if state["last"] is not None:
            t_prev, q_prev = state["last"]
            state["max_speed"] = max(state["max_speed"], float(np.max(np.abs(q - q_prev))) / ((solve.t_ns - t_prev) / 1e9))
        state["last"] = (solve.t_ns, q)
        pos = max(float(np.linalg.norm(ik.grip_pose(s).position - trial["goal"][s].position)) for s in SIDES)
        ori = max(quat_angle(ik.grip_pose(s).orientation, trial["goal"][s].orientation) for s in SIDES)
        if pos <= POS_TOL_M and ori <= ORI_TOL_RAD:
            state["t"] = solve.t_ns / 1e9
            raise Done

    try:
        driver.run(max_s, lambda t: msg, on_solve)
    except Done:
        pass
    pos = max(float(np.linalg.norm(ik.grip_pose(s).position - trial["goal"][s].position)) for s in SIDES)
    missed = {} if state["t"] is not None else explain_miss(loop, trial)
    start_q = np.array([q0[n] for n in names])
    for side, m in missed.items():
        if census:
            m["census"] = solution_census(loop, trial, start_q, side, census, np.random.default_rng(index),
                                          connectivity)
        if connectivity:
            m["connected"] = own_space_connected(loop, trial, start_q, side, connectivity)
    return {"t": state["t"], "max_speed": state["max_speed"], "final_pos": pos,
            "fallback": (ik.fallback.goals_engaged - engaged0) if ik.fallback else 0, "missed": missed,
            "cpu_ns": state["cpu_ns"]}


NEAR_M = 0.013  # pairs this close at the end hold an arm (the rows aim at 10 mm)


def explain_miss(loop: IkLoop, trial: dict) -> dict[str, dict]:
    """Per arm that missed its target at the end of a trial: how far off, what
    the fallback was doing, and the checked pairs closer than ``NEAR_M``
    that involve it."""
    ik, fb = loop.ik, loop.ik.fallback
    cfg = fb.config if fb else None
    pairs, data = ik.collision_pairs, ik.configuration.data
    d = pairs.distances(data, 0.05) if pairs is not None else []
    out = {}
    for s in SIDES:
        pos = float(np.linalg.norm(ik.grip_pose(s).position - trial["goal"][s].position))
        ori = quat_angle(ik.grip_pose(s).orientation, trial["goal"][s].orientation)
        if pos <= POS_TOL_M and ori <= ORI_TOL_RAD:
            continue
        arm = fb.arms[s] if fb else None
        if arm is not None and arm.goal_q is not None:
            state = "goal mode, at the position, turned" if pos <= 2 * POS_TOL_M else "goal mode, away"
            state += ", on a checked route" if arm.route_checked else ", no clear route found"
        elif cfg is not None and pos <= cfg.stall_min_position_m and ori <= cfg.stall_min_orientation_rad:
            state = "inside the stall limit (no search)"
        elif arm is not None and arm.search is not None:
            state = "searching" if not arm.search.exhausted else "search given up"
        else:
            state = "tracking"
        near = []
        if pairs is not None:
            for (g1, g2), dist in zip(pairs.id_pairs, d):
                a, b = pairs.name(g1), pairs.name(g2)
                if dist < NEAR_M and (a.startswith(s) or b.startswith(s)):
                    near.append(f"{a} x {b} {dist * 1000:.1f} mm")
        out[s] = {"pos": pos, "ori": ori, "state": state, "near": near}
    return out


def own_space_connected(loop: IkLoop, trial: dict, start_q: np.ndarray, side: str, checks: int,
                        goal_q: np.ndarray | None = None) -> bool:
    """Whether a route search (RRT-Connect, ``checks`` clearance checks at
    0.1 rad spacing) joins the arm's start to the configuration its target was
    sampled from, through postures where the arm keeps a route's clearance from
    its own links, its mount, the carriage and the column (the pairs no other
    joint moves; the other arm is left out). False is not a proof that no route
    exists, only that this much search found none."""
    fb = loop.ik.fallback
    idx = fb.index[side]
    goal = trial["q_target"][idx] if goal_q is None else goal_q
    check = own_space_check(loop.ik, side, own_pair_indices(loop.ik, side), fb.path_clearance)
    planner = RoutePlanner(start_q[idx], goal, fb.lower[idx], fb.upper[idx], check,
                           np.random.default_rng(0), max_checks=checks)
    while not planner.advance(1000):
        pass
    return planner.route is not None


def solution_census(loop: IkLoop, trial: dict, start_q: np.ndarray, side: str, seeds: int,
                    rng: np.random.Generator, connectivity: int = 0) -> tuple[int, int, int]:
    """How many distinct solutions for one arm's target ``seeds`` seeds find
    (the start posture, then uniform random ones), with the fallback's own
    acceptance (0.5 mm / 0.005 rad within 60 search steps, arm pairs clear by
    a solution's clearance), and how many of them have a straight or
    through-home route from the start posture clear of the 10 mm band at
    0.1 rad spacing: what a search with far more seeds than the fallback's
    budget could offer; with ``connectivity``, also how many a route search
    of that many checks joins to the start (:func:`own_space_connected`).
    Uses the fallback's search solver and checks."""
    fb = loop.ik.fallback
    solver, idx = fb.solver, fb.index[side]
    lift = loop.profile.lift_height_to_joint(trial["lift"])
    goal = {s: (trial["goal"][side] if s == side else None) for s in SIDES}
    cfg = fb.config
    found: list[np.ndarray] = []
    for k in range(seeds):
        q = start_q.copy()
        if k:
            q[idx] = rng.uniform(fb.lower[idx], fb.upper[idx])
        solver.reset(q, lift_joint=lift)
        for _ in range(cfg.max_iterations_per_seed):
            solver.settle_step(goal)
            pos, ori = _pose_error(solver.grip_pose(side), goal[side])  # the search's own measure
            if pos <= cfg.position_tolerance_m and ori <= cfg.orientation_tolerance_rad:
                break
        else:
            continue
        q_found = solver.arm_q()[idx].copy()
        if fb._clear(side) and all(np.max(np.abs(q_found - f)) > 0.05 for f in found):
            found.append(q_found)
    routed = 0
    for q_found in found:
        for route in ([q_found], [fb.home[idx], q_found]):
            clear = True
            for point in fb._route_samples(start_q[idx], route):
                q = start_q.copy()
                q[idx] = point
                solver.reset(q, lift_joint=lift)
                if not fb._clear(side, fb.path_clearance):
                    clear = False
                    break
            if clear:
                routed += 1
                break
    joined = sum(own_space_connected(loop, trial, start_q, side, connectivity, q_found) for q_found in found) \
        if connectivity else 0
    return len(found), routed, joined


def run(n: int, max_s: float, starts: list[str], seed: int = 0, fallback: bool = True, clearance: float = 0.02,
        library_size: int | None = None,
        progress: bool = False, census: int = 0, search_iterations: int | None = None,
        route_checks: int | None = None, connectivity: int = 0,
        search_seed: int | None = None, region_samples: int = 0,
        roadmap_samples: int | None = None, overrides: dict[str, Any] | None = None) -> dict[str, list[dict]]:
    data = ik_config(global_search__enabled=fallback)
    for key, value in (overrides or {}).items():
        if key not in data["global_search"]:
            raise SystemExit(f"--set: global_search has no key {key!r}")
        data["global_search"][key] = value
    if route_checks is not None:
        data["global_search"]["route_search_checks"] = route_checks
    if search_seed is not None:
        data["global_search"]["rng_seed"] = search_seed
    if library_size is not None:
        data["global_search"]["library_size"] = library_size
    if roadmap_samples is not None:
        data["global_search"]["roadmap_samples"] = roadmap_samples
    if search_iterations is not None:
        data["global_search"]["iterations_per_tick"] = search_iterations
    loop = make_loop(data)
    roadmaps = None
    if region_samples:
        t0 = time.perf_counter()
        roadmaps = arm_roadmaps(loop, region_samples)
        for side, rm in roadmaps.items():
            sizes = list(rm.region_sizes().values())
            print(f"{side} arm free space: {len(sizes)} regions in a roadmap of {len(rm.nodes)} clear samples, "
                  f"largest {sizes[:5]}, home's {rm.region_sizes()[rm.node_regions()[0]]} "
                  f"({rm.checks} checks, {time.perf_counter() - t0:.0f} s)", flush=True)
    trials = make_trials(loop, n, seed, clearance, roadmaps)
    if roadmaps is not None and trials:
        c = trials[0]["counts"]
        print(f"configurations drawn {c['drawn']}, kept {c['kept']} (each arm's in home's region); "
              f"{100 * c['kept'] / c['drawn']:.1f} % of the uniform draws", flush=True)
    out: dict[str, list[dict]] = {}
    for start in starts:
        results = []
        t0 = time.perf_counter()
        for k, trial in enumerate(trials):
            loop = restart(loop)
            results.append(run_trial(loop, trial, start, max_s, census, k, connectivity))
            if progress and (k + 1) % 20 == 0:
                ok = sum(r["t"] is not None for r in results)
                print(f"  from {start}: {k + 1}/{n}, {ok} converged, {time.perf_counter() - t0:.0f} s", flush=True)
        out[start] = results
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--max-s", type=float, default=6.0, help="time allowed per trial (600 ticks of 10 ms)")
    ap.add_argument("--starts", nargs="+", default=["home", "random"], choices=["home", "random"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target-clearance", type=float, default=0.02, help="m between every checked pair at the target")
    ap.add_argument("--no-fallback", action="store_true", help="local IK only (global_search disabled)")
    ap.add_argument("--library-size", type=int, default=None,
                    help="global_search.library_size (default: the shipped ik.yaml's)")
    ap.add_argument("--roadmap-samples", type=int, default=None,
                    help="global_search.roadmap_samples (default: the shipped ik.yaml's)")
    ap.add_argument("--search-iterations", type=int, default=None,
                    help="global_search.iterations_per_tick (default: the shipped ik.yaml's)")
    ap.add_argument("--route-checks", type=int, default=None,
                    help="global_search.route_search_checks (default: the shipped ik.yaml's)")
    ap.add_argument("--search-seed", type=int, default=None,
                    help="global_search.rng_seed: the search's random stream (default: the shipped ik.yaml's); "
                         "runs with other streams show how much of a difference is chance")
    ap.add_argument("--region-samples", type=int, default=0, metavar="N",
                    help="draw targets and random starts only in home's region of each arm's free space, as an "
                         "N-sample roadmap finds it (0: the whole joint box)")
    ap.add_argument("--uniform-guard", action="store_true",
                    help="the collision guard shortens both arms' steps alike (the code before the per-arm guard)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="any other global_search setting of ik.yaml, e.g. stall_min_position_m=0.001 (repeatable)")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--explain", action="store_true",
                    help="per trial not converged: each missing arm's error, fallback state and the pairs holding it")
    ap.add_argument("--census", type=int, default=0, metavar="SEEDS",
                    help="with --explain: per missing arm, the distinct solutions SEEDS seeds find and how many "
                         "have a clear straight or through-home route from the start")
    ap.add_argument("--connectivity", type=int, default=0, metavar="CHECKS",
                    help="with --explain: per missing arm, whether a route search of CHECKS clearance checks joins "
                         "its start to the configuration its target was sampled from (own links, mount, carriage "
                         "and column only)")
    args = ap.parse_args()
    if args.census and (args.no_fallback or not args.explain):
        ap.error("--census needs --explain and the global fallback")
    if args.connectivity and (args.no_fallback or not args.explain):
        ap.error("--connectivity needs --explain and the global fallback")
    overrides = {}
    for item in args.set:
        key, sep, text = item.partition("=")
        if not sep:
            ap.error(f"--set {item!r}: expected KEY=VALUE")
        overrides[key.strip()] = yaml.safe_load(text)
    if args.uniform_guard:
        BimanualIk._guard_each_arm = BimanualIk._guard
    res = run(args.targets, args.max_s, args.starts, args.seed, not args.no_fallback, args.target_clearance,
              args.library_size, args.progress, args.census, args.search_iterations,
              args.route_checks, args.connectivity, args.search_seed, args.region_samples,
              args.roadmap_samples, overrides)
    cap = ik_config()["solver"]["arm_max_speed_rad_s"]
    region = f", every arm's joints in home's region of its free space ({args.region_samples}-sample roadmap)" \
        if args.region_samples else ""
    print(f"{args.targets} uniformly sampled reachable targets (proxies >= {args.target_clearance * 1000:.0f} mm apart, "
          f"grips inside the workspace{region}), {args.max_s:.0f} s each, "
          f"global fallback {'off' if args.no_fallback else 'on'}")
    for start, results in res.items():
        t = np.array([r["t"] for r in results if r["t"] is not None])
        ok = len(t)
        print(f"from {start:<6}: converged {ok}/{len(results)} ({100 * ok / len(results):.1f} %) within "
              f"{POS_TOL_M * 1000:.0f} mm / {ORI_TOL_RAD} rad")
        if ok:
            print(f"              time to converge median {np.median(t):.2f} s, p90 {np.percentile(t, 90):.2f} s, "
                  f"max {t.max():.2f} s")
        failed = [r["final_pos"] for r in results if r["t"] is None]
        if failed:
            print(f"              not converged: final position error median {np.median(failed) * 1000:.1f} mm")
        if args.explain:
            states: dict[str, int] = {}
            kinds = {"a solution with a clear route": 0, "solutions, none with a clear route": 0, "no solution": 0}
            joined = {True: 0, False: 0}
            for k, r in enumerate(results):
                for side, m in r["missed"].items():
                    states[m["state"]] = states.get(m["state"], 0) + 1
                    held = "; ".join(m["near"]) or "no pair under 13 mm"
                    census = ""
                    if "census" in m:
                        found, routed, joined_n = m["census"]
                        census = f" [census: {found} solutions, {routed} with a clear route" + (
                            f", {joined_n} joined by route search]" if args.connectivity else "]")
                        if args.connectivity:
                            kinds["solutions, one joined by route search"] = kinds.get(
                                "solutions, one joined by route search", 0) + (joined_n > 0)
                        kinds[("a solution with a clear route" if routed else "solutions, none with a clear route")
                              if found else "no solution"] += 1
                    if "connected" in m:
                        joined[m["connected"]] += 1
                        census += (" [sampled configuration joined to the start]" if m["connected"] else
                                   f" [sampled configuration not joined in {args.connectivity} checks]")
                    print(f"              trial {k} {side}: {m['pos'] * 1000:.1f} mm, {m['ori']:.3f} rad, "
                          f"{m['state']}: {held}{census}")
            print("              arms that missed, by state: " + ", ".join(f"{n} {st}" for st, n in sorted(states.items(), key=lambda x: -x[1])))
            if args.connectivity:
                print(f"              connectivity ({args.connectivity} checks per missing arm): {joined[True]} "
                      f"sampled configurations joined to the start, {joined[False]} not")
            if args.census:
                print(f"              census ({args.census} seeds per missing arm): "
                      + ", ".join(f"{n} {kind}" for kind, n in kinds.items()))
            if args.census and args.connectivity:
                unjoined = sum(not all(m["connected"] or m["census"][2] > 0 for m in r["missed"].values())
                               for r in results if r["t"] is None)
                kept = len(results) - unjoined
                print(f"              {unjoined} trials have a missing arm that no route search joined to its target "
                      f"(neither the sampled configuration nor any census solution, {args.connectivity} checks "
                      f"each, the other arm left out); of the other {kept}, {ok} converged "
                      f"({100 * ok / max(kept, 1):.1f} %)")
        used = sum(r["fallback"] > 0 for r in results)
        speed = max(r["max_speed"] for r in results)
        print(f"              fallback goals used in {used} trials; largest joint speed {speed:.3f} rad/s "
              f"(cap {cap} rad/s)")
        cpu = np.array([c for r in results for c in r["cpu_ns"]]) / 1e6
        print(f"              CPU per solve (the tick with its search share): median {np.median(cpu):.2f} ms, "
              f"p99 {np.percentile(cpu, 99):.2f} ms, max {cpu.max():.2f} ms over {len(cpu)} solves")


if __name__ == "__main__":
    main()
