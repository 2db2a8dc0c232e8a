#!/bin/sh
# Gives a hub that is not root the folders its rooms' control groups go in (cgroup v1):
# an `atrium` folder under this process's own group in the pids, memory and cpu
# controllers, owned by the hub's user (the first argument). Run it as root in the hub's
# own groups, before the hub starts: with systemd, `ExecStartPre=+<this> atrium`
# (docs/operations.md, "Room limits for a hub that is not root").
set -eu
user=${1:?usage: room-groups.sh USER}
root=${ATRIUM_CGROUP_ROOT:-/sys/fs/cgroup}
for controller in pids memory cpu; do
    own=$(awk -F: -v c="$controller" '{ n = split($2, names, ","); for (i = 1; i <= n; i++) if (names[i] == c) print $3 }' /proc/self/cgroup)
    mkdir -p "$root/$controller$own/atrium"
    chown -R "$user" "$root/$controller$own/atrium"
done
