//! `/proc/self/mounts`: the size a container was given for `/dev/shm`, where NCCL keeps the
//! segments ranks on one node talk through and PyTorch's DataLoader workers pass batches.

/// The size of the tmpfs mounted at `/dev/shm`, in bytes, from its `size=` option (the last
/// mount there wins, as the kernel shows the top one last). `None` when nothing is mounted
/// there, it is not a tmpfs, or the size is not stated in bytes (`size=50%` of memory, or no
/// option: half of memory, the kernel's default, which is never the small case).
#[must_use]
pub fn shm_bytes(mounts: &str) -> Option<u64> {
    let mut found = None;
    for line in mounts.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(_source), Some(target), Some(fstype), Some(options)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if target != "/dev/shm" {
            continue;
        }
        found = if fstype == "tmpfs" {
            options
                .split(',')
                .find_map(|o| o.strip_prefix("size="))
                .and_then(size_bytes)
        } else {
            None
        };
    }
    found
}

/// `65536k`, `64m`, `1g`, `67108864`: tmpfs's size with its optional binary suffix.
fn size_bytes(value: &str) -> Option<u64> {
    let (digits, unit) = match value.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => value.split_at(at),
        None => (value, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Docker's default, as `cat /proc/self/mounts` prints it in a container started without
    /// `--shm-size` (moby's `DefaultShmSize`, 64 MiB).
    const DOCKER_DEFAULT: &str = "overlay / overlay rw,relatime,lowerdir=/var/lib/docker/overlay2/l/X:/var/lib/docker/overlay2/l/Y,upperdir=/u,workdir=/w 0 0\n\
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n\
tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n\
shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n";

    #[test]
    fn dockers_default_shm_is_64_mib() {
        assert_eq!(shm_bytes(DOCKER_DEFAULT), Some(64 << 20));
    }

    #[test]
    fn the_last_mount_on_dev_shm_wins_and_units_are_binary() {
        let two = "shm /dev/shm tmpfs rw,size=65536k 0 0\nshm /dev/shm tmpfs rw,size=8g 0 0\n";
        assert_eq!(shm_bytes(two), Some(8 << 30));
        assert_eq!(
            shm_bytes("x /dev/shm tmpfs rw,size=1073741824 0 0"),
            Some(1 << 30)
        );
        assert_eq!(shm_bytes("x /dev/shm tmpfs rw,size=1G 0 0"), Some(1 << 30));
    }

    #[test]
    fn no_stated_size_is_no_answer() {
        // The host's own /dev/shm (or --ipc=host): no size option, half of memory.
        assert_eq!(
            shm_bytes("tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0"),
            None
        );
        assert_eq!(shm_bytes("tmpfs /dev/shm tmpfs rw,size=50% 0 0"), None);
        assert_eq!(shm_bytes("/dev/sda1 /dev/shm ext4 rw 0 0"), None);
        assert_eq!(shm_bytes(""), None);
        assert_eq!(
            shm_bytes("x /dev/shm tmpfs rw,size=99999999999999999999k 0 0"),
            None
        );
    }
}
