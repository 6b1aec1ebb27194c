"""Building and policing the sandbox learner code runs in: what the machine allows (machine.py), one sandbox's life
(box.py), its launcher (boot.py, lockdown.py), its mount view (view.py), its limits and environment (policy.py,
seccomp.json), its cgroups and process tree (cgroups.py, proctree.py), and the preloaded zygote (zygote.py)."""
