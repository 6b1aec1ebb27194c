"""Building and policing the sandbox learner code runs in: what the machine allows (machine.py), one sandbox's life
(box.py, and what it reports and counts while it runs: running.py), its launcher (boot.py, started from one
long-lived thread: spawn.py; beside it one unit per kernel facility: namespaces.py, mounts.py, pid1.py, program.py,
lockdown.py; its configuration's schema, launch_config.py), its mount view (view.py), its limits and environment
(policy.py), what keeps sandboxes from each other and seals a suite's ranks (sealing.py), its system-call policy
(seccomp.json, compiled by seccomp.py, or assembled by seccomp_bpf.py from syscalls.json), its cgroups and process
tree (cgroups.py, proctree.py), and the preloaded zygote (zygote.py)."""
