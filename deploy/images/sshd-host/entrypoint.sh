#!/bin/sh
# entrypoint.sh starts primer/sshd-host:1.0, a test "machine" for the vm
# backend: it makes the host keys a new container lacks (so each host has
# keys of its own), installs root's authorized key from $AUTHORIZED_KEYS or
# the file /etc/primer/authorized_keys, and runs sshd in the background.
# sshd is not the main process: killing it leaves the machine up with its
# other processes, as on a VM whose sshd died. Run with --init: sshd is
# started detached (setsid -f), so its parent is that init, which reaps it
# and every orphan, and the container stops on SIGTERM.
set -eu
ssh-keygen -A >/dev/null
mkdir -p /run/sshd /root/.ssh
chmod 700 /root/.ssh
if [ -n "${AUTHORIZED_KEYS:-}" ]; then
	printf '%s\n' "$AUTHORIZED_KEYS" >/root/.ssh/authorized_keys
elif [ -f /etc/primer/authorized_keys ]; then
	cp /etc/primer/authorized_keys /root/.ssh/authorized_keys
fi
[ ! -f /root/.ssh/authorized_keys ] || chmod 600 /root/.ssh/authorized_keys
setsid -f /usr/sbin/sshd -D -e
exec sleep infinity
