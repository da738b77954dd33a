// SPDX-License-Identifier: GPL-2.0

#include <linux/bottom_half.h>
#include <linux/hmm.h>
#include <linux/if_vlan.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/netdevice.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <net/dst.h>
#include <net/ip6_fib.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#ifdef CONFIG_RUST_RDMA_ABSTRACTIONS
/*
 * vmalloc_user(), charged to the caller's memory cgroup: a queue that a process sizes (up to
 * the device's max_qp_wr) is that process's memory, as its pinned pages are. A failure is
 * the caller's ENOMEM, not a kernel problem: no warning.
 */
__rust_helper void *rust_helper_rdma_vmalloc_user_account(unsigned long size)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;

	return __vmalloc_node_range_noprof(size, SHMLBA, VMALLOC_START, VMALLOC_END, gfp,
					   PAGE_KERNEL, VM_USERMAP, NUMA_NO_NODE,
					   __builtin_return_address(0));
}

__rust_helper struct page *rust_helper_sg_page_iter_page(struct sg_page_iter *piter)
{
	return sg_page_iter_page(piter);
}

__rust_helper void rust_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

__rust_helper void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

__rust_helper struct net_device *
rust_helper_netdev_notifier_info_to_dev(const struct netdev_notifier_info *info)
{
	return netdev_notifier_info_to_dev(info);
}

__rust_helper enum ib_port_state
rust_helper_ib_get_curr_port_state(struct net_device *net_dev)
{
	return ib_get_curr_port_state(net_dev);
}

__rust_helper bool rust_helper_is_vlan_dev(const struct net_device *dev)
{
	return is_vlan_dev(dev);
}

__rust_helper struct net_device *
rust_helper_rdma_vlan_dev_real_dev(const struct net_device *dev)
{
	return rdma_vlan_dev_real_dev(dev);
}

__rust_helper u16 rust_helper_rdma_vlan_dev_vlan_id(const struct net_device *dev)
{
	return rdma_vlan_dev_vlan_id(dev);
}

__rust_helper bool rust_helper_irqs_disabled(void)
{
	return irqs_disabled();
}

__rust_helper void rust_helper_local_bh_disable(void)
{
	local_bh_disable();
}

__rust_helper void rust_helper_local_bh_enable(void)
{
	local_bh_enable();
}

__rust_helper void rust_helper_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

__rust_helper void rust_helper_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

__rust_helper int rust_helper_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

__rust_helper void rust_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

__rust_helper void rust_helper_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

__rust_helper int rust_helper_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

__rust_helper unsigned char *rust_helper_skb_transport_header(const struct sk_buff *skb)
{
	return skb_transport_header(skb);
}

__rust_helper unsigned char *rust_helper_skb_network_header(const struct sk_buff *skb)
{
	return skb_network_header(skb);
}

__rust_helper unsigned char *rust_helper_skb_tail_pointer(const struct sk_buff *skb)
{
	return skb_tail_pointer(skb);
}

__rust_helper void rust_helper_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

__rust_helper void rust_helper_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

__rust_helper void rust_helper_skb_set_transport_header(struct sk_buff *skb, const int offset)
{
	skb_set_transport_header(skb, offset);
}

__rust_helper void rust_helper_skb_dst_set(struct sk_buff *skb, struct dst_entry *dst)
{
	skb_dst_set(skb, dst);
}

__rust_helper struct dst_entry *rust_helper_dst_clone(struct dst_entry *dst)
{
	return dst_clone(dst);
}

__rust_helper struct dst_entry *rust_helper_dst_check(struct dst_entry *dst, u32 cookie)
{
	return dst_check(dst, cookie);
}

#if IS_ENABLED(CONFIG_IPV6)
/* rt6_get_cookie() of an IPv6 output route: what dst_check() validates it against. */
__rust_helper u32 rust_helper_rdma_rt6_cookie(struct dst_entry *dst)
{
	return rt6_get_cookie(dst_rt6_info(dst));
}
#endif

__rust_helper void rust_helper_skb_queue_head_init(struct sk_buff_head *list)
{
	skb_queue_head_init(list);
}

__rust_helper void rust_helper_skb_queue_purge(struct sk_buff_head *list)
{
	skb_queue_purge(list);
}

__rust_helper bool rust_helper_virt_addr_valid(const void *addr)
{
	return virt_addr_valid(addr);
}

/* LL_RESERVED_SPACE(): the link-layer headroom an outgoing packet needs on dev. */
__rust_helper unsigned int rust_helper_ll_reserved_space(const struct net_device *dev)
{
	return LL_RESERVED_SPACE(dev);
}

/* The network namespace of a netdevice, and namespace references (for the RoCEv2 sockets). */
__rust_helper struct net *rust_helper_dev_net(const struct net_device *dev)
{
	return dev_net(dev);
}

__rust_helper struct net *rust_helper_maybe_get_net(struct net *net)
{
	return maybe_get_net(net);
}

__rust_helper void rust_helper_put_net(struct net *net)
{
	put_net(net);
}

/* The driver udata of a verb, which the core passes embedded in its attribute bundle. */
__rust_helper struct ib_udata *
rust_helper_uverbs_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* rdma_udata_to_drv_context() without the container_of to the driver's type. */
__rust_helper struct ib_ucontext *rust_helper_rdma_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

/* On-demand paging (kernel::rdma::odp): the MMU interval notifier and HMM page lists. */
__rust_helper bool
rust_helper_mmu_notifier_range_blockable(const struct mmu_notifier_range *range)
{
	return mmu_notifier_range_blockable(range);
}

__rust_helper void
rust_helper_mmu_interval_set_seq(struct mmu_interval_notifier *interval_sub, unsigned long cur_seq)
{
	mmu_interval_set_seq(interval_sub, cur_seq);
}

__rust_helper struct page *rust_helper_hmm_pfn_to_page(unsigned long hmm_pfn)
{
	return hmm_pfn_to_page(hmm_pfn);
}
#endif
