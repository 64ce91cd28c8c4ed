"""What every process of ours imports, the job's own included: standard library, each other
and the leaves at the top of the package only (importing one stays cheap inside a job).

=========================  ==================================================
module                     holds
=========================  ==================================================
``runtime.ranks``          which rank this process is (torchrun, srun, mpirun)
``runtime.signals``        SIGINT/SIGTERM/SIGHUP alike; a critical section
``runtime.lifeline``       children that cannot outlive the command
``runtime.procs``          is that pid still the process we mean
``runtime.locks``          lock files naming their holder
``runtime.stale``          leftovers of a killed process
``runtime.dotted``         a nested mapping read by a dotted key
``runtime.wandb_switch``   when a job logs to W&B
``runtime.outcome``        the outcome line at the end of a job's log
``runtime.lognoise``       launcher noise; the job's own last error
``runtime.ended``          how a job ended, from what it printed
=========================  ==================================================
"""
