/*
 * Names every enum tag, enum typedef and enum member of UCX's public UCT
 * headers (uct/api/uct.h, uct_def.h, tl.h, v2/uct_v2.h) of UCX 1.13.1 and of
 * UCX master, and checks the C type of the UCT_IFACE_FLAG_* macros (UCX
 * defines them with UCS_BIT: unsigned long). Compiled against our headers by
 * the CTest ucx_compat_enum_probe: any name we do not declare as UCX does is
 * a compile error. The lists were read off UCX's headers (preprocessed).
 */
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>

#define SAME_TYPE(_a, _b) __builtin_types_compatible_p(__typeof__(_a), _b)

_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_AM_BCOPY, unsigned long), "UCT_IFACE_FLAG_AM_BCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_AM_DUP, unsigned long), "UCT_IFACE_FLAG_AM_DUP is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_AM_SHORT, unsigned long), "UCT_IFACE_FLAG_AM_SHORT is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_AM_ZCOPY, unsigned long), "UCT_IFACE_FLAG_AM_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ATOMIC_CPU, unsigned long), "UCT_IFACE_FLAG_ATOMIC_CPU is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ATOMIC_DEVICE, unsigned long), "UCT_IFACE_FLAG_ATOMIC_DEVICE is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_CB_ASYNC, unsigned long), "UCT_IFACE_FLAG_CB_ASYNC is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_CB_SYNC, unsigned long), "UCT_IFACE_FLAG_CB_SYNC is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_CONNECT_TO_EP, unsigned long), "UCT_IFACE_FLAG_CONNECT_TO_EP is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_CONNECT_TO_IFACE, unsigned long), "UCT_IFACE_FLAG_CONNECT_TO_IFACE is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR, unsigned long), "UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_DEVICE_EP, unsigned long), "UCT_IFACE_FLAG_DEVICE_EP is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_DEVICE_LKEY, unsigned long), "UCT_IFACE_FLAG_DEVICE_LKEY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EP_CHECK, unsigned long), "UCT_IFACE_FLAG_EP_CHECK is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EP_KEEPALIVE, unsigned long), "UCT_IFACE_FLAG_EP_KEEPALIVE is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_AM_ID, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_AM_ID is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF, unsigned long), "UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EVENT_ASYNC_CB, unsigned long), "UCT_IFACE_FLAG_EVENT_ASYNC_CB is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EVENT_FD, unsigned long), "UCT_IFACE_FLAG_EVENT_FD is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EVENT_RECV, unsigned long), "UCT_IFACE_FLAG_EVENT_RECV is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EVENT_RECV_SIG, unsigned long), "UCT_IFACE_FLAG_EVENT_RECV_SIG is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_EVENT_SEND_COMP, unsigned long), "UCT_IFACE_FLAG_EVENT_SEND_COMP is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_GET_BCOPY, unsigned long), "UCT_IFACE_FLAG_GET_BCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_GET_SHORT, unsigned long), "UCT_IFACE_FLAG_GET_SHORT is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_GET_ZCOPY, unsigned long), "UCT_IFACE_FLAG_GET_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_INTER_NODE, unsigned long), "UCT_IFACE_FLAG_INTER_NODE is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_PENDING, unsigned long), "UCT_IFACE_FLAG_PENDING is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_PUT_BCOPY, unsigned long), "UCT_IFACE_FLAG_PUT_BCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_PUT_SHORT, unsigned long), "UCT_IFACE_FLAG_PUT_SHORT is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_PUT_ZCOPY, unsigned long), "UCT_IFACE_FLAG_PUT_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_TAG_EAGER_BCOPY, unsigned long), "UCT_IFACE_FLAG_TAG_EAGER_BCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_TAG_EAGER_SHORT, unsigned long), "UCT_IFACE_FLAG_TAG_EAGER_SHORT is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_TAG_EAGER_ZCOPY, unsigned long), "UCT_IFACE_FLAG_TAG_EAGER_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_TAG_RNDV_ZCOPY, unsigned long), "UCT_IFACE_FLAG_TAG_RNDV_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY, unsigned long), "UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY, unsigned long), "UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_IFACE_FLAG_V2_QUERY_TOKEN, unsigned long), "UCT_IFACE_FLAG_V2_QUERY_TOKEN is unsigned long in UCX");
_Static_assert(SAME_TYPE(UCT_AM_ID_MAX, unsigned long), "UCT_AM_ID_MAX is unsigned long in UCX");

int main(void)
{
    enum uct_am_trace_type tag_1 = (enum uct_am_trace_type)0;
    (void)tag_1;
    (void)UCT_AM_TRACE_TYPE_SEND; /* 1.13 uct_am_trace_type */
    (void)UCT_AM_TRACE_TYPE_RECV; /* 1.13 uct_am_trace_type */
    (void)UCT_AM_TRACE_TYPE_SEND_DROP; /* 1.13 uct_am_trace_type */
    (void)UCT_AM_TRACE_TYPE_RECV_DROP; /* 1.13 uct_am_trace_type */
    (void)UCT_AM_TRACE_TYPE_LAST; /* 1.13 uct_am_trace_type */
    enum uct_cb_param_flags tag_2 = (enum uct_cb_param_flags)0;
    (void)tag_2;
    (void)UCT_CB_PARAM_FLAG_DESC; /* 1.13 uct_cb_param_flags */
    (void)UCT_CB_PARAM_FLAG_FIRST; /* 1.13 uct_cb_param_flags */
    (void)UCT_CB_PARAM_FLAG_MORE; /* 1.13 uct_cb_param_flags */
    enum uct_cm_ep_priv_data_pack_args_field tag_3 = (enum uct_cm_ep_priv_data_pack_args_field)0;
    (void)tag_3;
    (void)UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME; /* 1.13 uct_cm_ep_priv_data_pack_args_field */
    enum uct_cm_ep_resolve_args_field tag_4 = (enum uct_cm_ep_resolve_args_field)0;
    (void)tag_4;
    (void)UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME; /* 1.13 uct_cm_ep_resolve_args_field */
    (void)UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS; /* 1.13 uct_cm_ep_resolve_args_field */
    enum uct_cm_remote_data_field tag_5 = (enum uct_cm_remote_data_field)0;
    (void)tag_5;
    (void)UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR; /* 1.13 uct_cm_remote_data_field */
    (void)UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH; /* 1.13 uct_cm_remote_data_field */
    (void)UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA; /* 1.13 uct_cm_remote_data_field */
    (void)UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH; /* 1.13 uct_cm_remote_data_field */
    enum uct_cm_listener_conn_request_args_field tag_6 = (enum uct_cm_listener_conn_request_args_field)0;
    (void)tag_6;
    (void)UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME; /* 1.13 uct_cm_listener_conn_request_args_field */
    (void)UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST; /* 1.13 uct_cm_listener_conn_request_args_field */
    (void)UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA; /* 1.13 uct_cm_listener_conn_request_args_field */
    (void)UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR; /* 1.13 uct_cm_listener_conn_request_args_field */
    enum uct_cm_ep_client_connect_args_field tag_7 = (enum uct_cm_ep_client_connect_args_field)0;
    (void)tag_7;
    (void)UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA; /* 1.13 uct_cm_ep_client_connect_args_field */
    (void)UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS; /* 1.13 uct_cm_ep_client_connect_args_field */
    enum uct_cm_ep_server_conn_notify_args_field tag_8 = (enum uct_cm_ep_server_conn_notify_args_field)0;
    (void)tag_8;
    (void)UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS; /* 1.13 uct_cm_ep_server_conn_notify_args_field */
    enum uct_component_attr_field tag_9 = (enum uct_component_attr_field)0;
    (void)tag_9;
    (void)UCT_COMPONENT_ATTR_FIELD_NAME; /* 1.13 uct_component_attr_field */
    (void)UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT; /* 1.13 uct_component_attr_field */
    (void)UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES; /* 1.13 uct_component_attr_field */
    (void)UCT_COMPONENT_ATTR_FIELD_FLAGS; /* 1.13 uct_component_attr_field */
    (void)UCT_COMPONENT_FLAG_CM; /* 1.13 anonymous */
    uct_device_type_t typedef_10 = (uct_device_type_t)0;
    (void)typedef_10;
    (void)UCT_DEVICE_TYPE_NET; /* 1.13 uct_device_type_t */
    (void)UCT_DEVICE_TYPE_SHM; /* 1.13 uct_device_type_t */
    (void)UCT_DEVICE_TYPE_ACC; /* 1.13 uct_device_type_t */
    (void)UCT_DEVICE_TYPE_SELF; /* 1.13 uct_device_type_t */
    (void)UCT_DEVICE_TYPE_LAST; /* 1.13 uct_device_type_t */
    enum uct_atomic_op tag_11 = (enum uct_atomic_op)0;
    (void)tag_11;
    uct_atomic_op_t typedef_12 = (uct_atomic_op_t)0;
    (void)typedef_12;
    (void)UCT_ATOMIC_OP_ADD; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_AND; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_OR; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_XOR; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_SWAP; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_CSWAP; /* 1.13 uct_atomic_op */
    (void)UCT_ATOMIC_OP_LAST; /* 1.13 uct_atomic_op */
    uct_alloc_method_t typedef_13 = (uct_alloc_method_t)0;
    (void)typedef_13;
    (void)UCT_ALLOC_METHOD_THP; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_MD; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_HEAP; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_MMAP; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_HUGE; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_LAST; /* 1.13 uct_alloc_method_t */
    (void)UCT_ALLOC_METHOD_DEFAULT; /* 1.13 uct_alloc_method_t */
    enum uct_iface_event_types tag_14 = (enum uct_iface_event_types)0;
    (void)tag_14;
    (void)UCT_EVENT_SEND_COMP; /* 1.13 uct_iface_event_types */
    (void)UCT_EVENT_RECV; /* 1.13 uct_iface_event_types */
    (void)UCT_EVENT_RECV_SIG; /* 1.13 uct_iface_event_types */
    enum uct_flush_flags tag_15 = (enum uct_flush_flags)0;
    (void)tag_15;
    (void)UCT_FLUSH_FLAG_LOCAL; /* 1.13 uct_flush_flags */
    (void)UCT_FLUSH_FLAG_CANCEL; /* 1.13 uct_flush_flags */
    enum uct_progress_types tag_16 = (enum uct_progress_types)0;
    (void)tag_16;
    (void)UCT_PROGRESS_SEND; /* 1.13 uct_progress_types */
    (void)UCT_PROGRESS_RECV; /* 1.13 uct_progress_types */
    (void)UCT_PROGRESS_THREAD_SAFE; /* 1.13 uct_progress_types */
    enum uct_msg_flags tag_17 = (enum uct_msg_flags)0;
    (void)tag_17;
    (void)UCT_SEND_FLAG_SIGNALED; /* 1.13 uct_msg_flags */
    (void)UCT_SEND_FLAG_PEER_CHECK; /* 1.13 uct_msg_flags */
    enum uct_cb_flags tag_18 = (enum uct_cb_flags)0;
    (void)tag_18;
    (void)UCT_CB_FLAG_RESERVED; /* 1.13 uct_cb_flags */
    (void)UCT_CB_FLAG_ASYNC; /* 1.13 uct_cb_flags */
    enum uct_iface_open_mode tag_19 = (enum uct_iface_open_mode)0;
    (void)tag_19;
    (void)UCT_IFACE_OPEN_MODE_DEVICE; /* 1.13 uct_iface_open_mode */
    (void)UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER; /* 1.13 uct_iface_open_mode */
    (void)UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT; /* 1.13 uct_iface_open_mode */
    enum uct_iface_params_field tag_20 = (enum uct_iface_params_field)0;
    (void)tag_20;
    (void)UCT_IFACE_PARAM_FIELD_CPU_MASK; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_OPEN_MODE; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_DEVICE; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_SOCKADDR; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_STATS_ROOT; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_RX_HEADROOM; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_ERR_HANDLER; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_ARG; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_CB; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_KEEPALIVE_INTERVAL; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET; /* 1.13 uct_iface_params_field */
    (void)UCT_IFACE_PARAM_FIELD_FEATURES; /* 1.13 uct_iface_params_field */
    uct_sockaddr_accessibility_t typedef_21 = (uct_sockaddr_accessibility_t)0;
    (void)typedef_21;
    (void)UCT_SOCKADDR_ACC_LOCAL; /* 1.13 uct_sockaddr_accessibility_t */
    (void)UCT_SOCKADDR_ACC_REMOTE; /* 1.13 uct_sockaddr_accessibility_t */
    (void)UCT_MD_FLAG_ALLOC; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_REG; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_NEED_MEMH; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_NEED_RKEY; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_ADVISE; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_FIXED; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_RKEY_PTR; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_SOCKADDR; /* 1.13 anonymous */
    (void)UCT_MD_FLAG_INVALIDATE; /* 1.13 anonymous */
    enum uct_md_mem_flags tag_22 = (enum uct_md_mem_flags)0;
    (void)tag_22;
    (void)UCT_MD_MEM_FLAG_NONBLOCK; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_FIXED; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_LOCK; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_HIDE_ERRORS; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_PUT; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_GET; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_ATOMIC; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_LOCAL_READ; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_LOCAL_WRITE; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_ALL; /* 1.13 uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_RMA; /* 1.13 uct_md_mem_flags */
    uct_mem_advice_t typedef_23 = (uct_mem_advice_t)0;
    (void)typedef_23;
    (void)UCT_MADV_NORMAL; /* 1.13 uct_mem_advice_t */
    (void)UCT_MADV_WILLNEED; /* 1.13 uct_mem_advice_t */
    enum uct_cm_attr_field tag_24 = (enum uct_cm_attr_field)0;
    (void)tag_24;
    (void)UCT_CM_ATTR_FIELD_MAX_CONN_PRIV; /* 1.13 uct_cm_attr_field */
    enum uct_listener_attr_field tag_25 = (enum uct_listener_attr_field)0;
    (void)tag_25;
    (void)UCT_LISTENER_ATTR_FIELD_SOCKADDR; /* 1.13 uct_listener_attr_field */
    enum uct_listener_params_field tag_26 = (enum uct_listener_params_field)0;
    (void)tag_26;
    (void)UCT_LISTENER_PARAM_FIELD_BACKLOG; /* 1.13 uct_listener_params_field */
    (void)UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB; /* 1.13 uct_listener_params_field */
    (void)UCT_LISTENER_PARAM_FIELD_USER_DATA; /* 1.13 uct_listener_params_field */
    enum uct_ep_params_field tag_27 = (enum uct_ep_params_field)0;
    (void)tag_27;
    (void)UCT_EP_PARAM_FIELD_IFACE; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_USER_DATA; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_DEV_ADDR; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_IFACE_ADDR; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CM; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CONN_REQUEST; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PATH_INDEX; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CM_RESOLVE_CB; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PRIV_DATA; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH; /* 1.13 uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR; /* 1.13 uct_ep_params_field */
    enum uct_ep_connect_params_field tag_28 = (enum uct_ep_connect_params_field)0;
    (void)tag_28;
    (void)UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA; /* 1.13 uct_ep_connect_params_field */
    (void)UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH; /* 1.13 uct_ep_connect_params_field */
    enum uct_iface_feature tag_29 = (enum uct_iface_feature)0;
    (void)tag_29;
    (void)UCT_IFACE_FEATURE_AM; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_PUT; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_GET; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_AMO32; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_AMO64; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_TAG; /* 1.13 uct_iface_feature */
    (void)UCT_IFACE_FEATURE_LAST; /* 1.13 uct_iface_feature */
    enum uct_md_mem_attr_field tag_30 = (enum uct_md_mem_attr_field)0;
    (void)tag_30;
    uct_md_mem_attr_field_t typedef_31 = (uct_md_mem_attr_field_t)0;
    (void)typedef_31;
    (void)UCT_MD_MEM_ATTR_FIELD_MEM_TYPE; /* 1.13 uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_SYS_DEV; /* 1.13 uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS; /* 1.13 uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH; /* 1.13 uct_md_mem_attr_field */
    (void)UCT_TAG_RECV_CB_INLINE_DATA; /* 1.13 anonymous */
    uct_mem_alloc_params_field_t typedef_32 = (uct_mem_alloc_params_field_t)0;
    (void)typedef_32;
    (void)UCT_MEM_ALLOC_PARAM_FIELD_FLAGS; /* 1.13 uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS; /* 1.13 uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE; /* 1.13 uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_MDS; /* 1.13 uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_NAME; /* 1.13 uct_mem_alloc_params_field_t */
    enum uct_ep_operation tag_33 = (enum uct_ep_operation)0;
    (void)tag_33;
    uct_ep_operation_t typedef_34 = (uct_ep_operation_t)0;
    (void)typedef_34;
    (void)UCT_EP_OP_AM_SHORT; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_AM_BCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_AM_ZCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_PUT_SHORT; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_PUT_BCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_PUT_ZCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_GET_SHORT; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_GET_BCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_GET_ZCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_EAGER_SHORT; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_EAGER_BCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_EAGER_ZCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_RNDV_ZCOPY; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_ATOMIC_POST; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_ATOMIC_FETCH; /* 1.13 uct_ep_operation */
    (void)UCT_EP_OP_LAST; /* 1.13 uct_ep_operation */
    enum uct_perf_attr_field tag_35 = (enum uct_perf_attr_field)0;
    (void)tag_35;
    (void)UCT_PERF_ATTR_FIELD_OPERATION; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_RECV_OVERHEAD; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_BANDWIDTH; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LATENCY; /* 1.13 uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS; /* 1.13 uct_perf_attr_field */
    uct_md_mem_dereg_field_mask_t typedef_36 = (uct_md_mem_dereg_field_mask_t)0;
    (void)typedef_36;
    (void)UCT_MD_MEM_DEREG_FIELD_MEMH; /* 1.13 uct_md_mem_dereg_field_mask_t */
    (void)UCT_MD_MEM_DEREG_FIELD_FLAGS; /* 1.13 uct_md_mem_dereg_field_mask_t */
    (void)UCT_MD_MEM_DEREG_FIELD_COMPLETION; /* 1.13 uct_md_mem_dereg_field_mask_t */
    uct_md_mkey_pack_field_mask_t typedef_37 = (uct_md_mkey_pack_field_mask_t)0;
    (void)typedef_37;
    (void)UCT_MD_MKEY_PACK_FIELD_FLAGS; /* 1.13 uct_md_mkey_pack_field_mask_t */
    enum uct_ep_attr_field tag_38 = (enum uct_ep_attr_field)0;
    (void)tag_38;
    (void)UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR; /* 1.13 uct_ep_attr_field */
    (void)UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR; /* 1.13 uct_ep_attr_field */
    uct_iface_is_reachable_field_mask_t typedef_39 = (uct_iface_is_reachable_field_mask_t)0;
    (void)typedef_39;
    (void)UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR; /* 1.13 uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR; /* 1.13 uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING; /* 1.13 uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH; /* 1.13 uct_iface_is_reachable_field_mask_t */
    uct_md_mem_dereg_flags_t typedef_40 = (uct_md_mem_dereg_flags_t)0;
    (void)typedef_40;
    (void)UCT_MD_MEM_DEREG_FLAG_INVALIDATE; /* 1.13 uct_md_mem_dereg_flags_t */
    uct_md_mkey_pack_flags_t typedef_41 = (uct_md_mkey_pack_flags_t)0;
    (void)typedef_41;
    (void)UCT_MD_MKEY_PACK_FLAG_INVALIDATE; /* 1.13 uct_md_mkey_pack_flags_t */
    enum uct_am_trace_type tag_42 = (enum uct_am_trace_type)0;
    (void)tag_42;
    uct_am_trace_type_t typedef_43 = (uct_am_trace_type_t)0;
    (void)typedef_43;
    (void)UCT_COMPONENT_FLAG_CM; /* master anonymous */
    (void)UCT_COMPONENT_FLAG_RKEY_PTR; /* master anonymous */
    enum uct_iface_event_types tag_44 = (enum uct_iface_event_types)0;
    (void)tag_44;
    (void)UCT_EVENT_SEND_COMP; /* master uct_iface_event_types */
    (void)UCT_EVENT_RECV; /* master uct_iface_event_types */
    (void)UCT_EVENT_RECV_SIG; /* master uct_iface_event_types */
    (void)UCT_EVENT_SPEED_CHANGE; /* master uct_iface_event_types */
    enum uct_flush_flags tag_45 = (enum uct_flush_flags)0;
    (void)tag_45;
    (void)UCT_FLUSH_FLAG_LOCAL; /* master uct_flush_flags */
    (void)UCT_FLUSH_FLAG_CANCEL; /* master uct_flush_flags */
    (void)UCT_FLUSH_FLAG_REMOTE; /* master uct_flush_flags */
    enum uct_iface_open_mode tag_46 = (enum uct_iface_open_mode)0;
    (void)tag_46;
    (void)UCT_IFACE_OPEN_MODE_DEVICE; /* master uct_iface_open_mode */
    (void)UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER; /* master uct_iface_open_mode */
    (void)UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT; /* master uct_iface_open_mode */
    (void)UCT_IFACE_OPEN_MODE_STUB; /* master uct_iface_open_mode */
    (void)UCT_MD_FLAG_ALLOC; /* master anonymous */
    (void)UCT_MD_FLAG_REG; /* master anonymous */
    (void)UCT_MD_FLAG_NEED_MEMH; /* master anonymous */
    (void)UCT_MD_FLAG_NEED_RKEY; /* master anonymous */
    (void)UCT_MD_FLAG_ADVISE; /* master anonymous */
    (void)UCT_MD_FLAG_FIXED; /* master anonymous */
    (void)UCT_MD_FLAG_RKEY_PTR; /* master anonymous */
    (void)UCT_MD_FLAG_SOCKADDR; /* master anonymous */
    (void)UCT_MD_FLAG_INVALIDATE; /* master anonymous */
    (void)UCT_MD_FLAG_EXPORTED_MKEY; /* master anonymous */
    (void)UCT_MD_FLAG_REG_DMABUF; /* master anonymous */
    (void)UCT_MD_FLAG_LAST; /* master anonymous */
    enum uct_md_mem_flags tag_47 = (enum uct_md_mem_flags)0;
    (void)tag_47;
    (void)UCT_MD_MEM_FLAG_NONBLOCK; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_FIXED; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_LOCK; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_FLAG_HIDE_ERRORS; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_PUT; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_GET; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_REMOTE_ATOMIC; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_LOCAL_READ; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_LOCAL_WRITE; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_SYMMETRIC_RKEY; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_GVA; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_ALL; /* master uct_md_mem_flags */
    (void)UCT_MD_MEM_ACCESS_RMA; /* master uct_md_mem_flags */
    enum uct_ep_params_field tag_48 = (enum uct_ep_params_field)0;
    (void)tag_48;
    (void)UCT_EP_PARAM_FIELD_IFACE; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_USER_DATA; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_DEV_ADDR; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_IFACE_ADDR; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CM; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CONN_REQUEST; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PATH_INDEX; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_CM_RESOLVE_CB; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PRIV_DATA; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH; /* master uct_ep_params_field */
    (void)UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH; /* master uct_ep_params_field */
    enum uct_iface_feature tag_49 = (enum uct_iface_feature)0;
    (void)tag_49;
    (void)UCT_IFACE_FEATURE_AM; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_PUT; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_GET; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_AMO32; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_AMO64; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_TAG; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_FLUSH_REMOTE; /* master uct_iface_feature */
    (void)UCT_IFACE_FEATURE_LAST; /* master uct_iface_feature */
    enum uct_md_mem_attr_field tag_50 = (enum uct_md_mem_attr_field)0;
    (void)tag_50;
    uct_md_mem_attr_field_t typedef_51 = (uct_md_mem_attr_field_t)0;
    (void)typedef_51;
    (void)UCT_MD_MEM_ATTR_FIELD_MEM_TYPE; /* master uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_SYS_DEV; /* master uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS; /* master uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH; /* master uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_DMABUF_FD; /* master uct_md_mem_attr_field */
    (void)UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET; /* master uct_md_mem_attr_field */
    uct_mem_alloc_params_field_t typedef_52 = (uct_mem_alloc_params_field_t)0;
    (void)typedef_52;
    (void)UCT_MEM_ALLOC_PARAM_FIELD_FLAGS; /* master uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS; /* master uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE; /* master uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_MDS; /* master uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_NAME; /* master uct_mem_alloc_params_field_t */
    (void)UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE; /* master uct_mem_alloc_params_field_t */
    enum uct_ep_operation tag_53 = (enum uct_ep_operation)0;
    (void)tag_53;
    uct_ep_operation_t typedef_54 = (uct_ep_operation_t)0;
    (void)typedef_54;
    (void)UCT_EP_OP_AM_SHORT; /* master uct_ep_operation */
    (void)UCT_EP_OP_AM_BCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_AM_ZCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_PUT_SHORT; /* master uct_ep_operation */
    (void)UCT_EP_OP_PUT_BCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_PUT_ZCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_GET_SHORT; /* master uct_ep_operation */
    (void)UCT_EP_OP_GET_BCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_GET_ZCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_EAGER_SHORT; /* master uct_ep_operation */
    (void)UCT_EP_OP_EAGER_BCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_EAGER_ZCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_RNDV_ZCOPY; /* master uct_ep_operation */
    (void)UCT_EP_OP_ATOMIC_POST; /* master uct_ep_operation */
    (void)UCT_EP_OP_ATOMIC_FETCH; /* master uct_ep_operation */
    (void)UCT_EP_OP_FLUSH; /* master uct_ep_operation */
    (void)UCT_EP_OP_LAST; /* master uct_ep_operation */
    enum uct_perf_attr_field tag_55 = (enum uct_perf_attr_field)0;
    (void)tag_55;
    (void)UCT_PERF_ATTR_FIELD_OPERATION; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_RECV_OVERHEAD; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_BANDWIDTH; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_LATENCY; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS; /* master uct_perf_attr_field */
    (void)UCT_PERF_ATTR_FIELD_FLAGS; /* master uct_perf_attr_field */
    uct_perf_attr_flags_t typedef_56 = (uct_perf_attr_flags_t)0;
    (void)typedef_56;
    (void)UCT_PERF_ATTR_FLAGS_TX_RX_SHARED; /* master uct_perf_attr_flags_t */
    uct_md_mem_reg_field_mask_t typedef_57 = (uct_md_mem_reg_field_mask_t)0;
    (void)typedef_57;
    (void)UCT_MD_MEM_REG_FIELD_FLAGS; /* master uct_md_mem_reg_field_mask_t */
    (void)UCT_MD_MEM_REG_FIELD_DMABUF_FD; /* master uct_md_mem_reg_field_mask_t */
    (void)UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET; /* master uct_md_mem_reg_field_mask_t */
    (void)UCT_MD_MEM_REG_FIELD_MEM_TYPE; /* master uct_md_mem_reg_field_mask_t */
    uct_md_mem_attach_field_mask_t typedef_58 = (uct_md_mem_attach_field_mask_t)0;
    (void)typedef_58;
    (void)UCT_MD_MEM_ATTACH_FIELD_FLAGS; /* master uct_md_mem_attach_field_mask_t */
    (void)UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE; /* master uct_md_mem_attach_field_mask_t */
    enum uct_ep_attr_field tag_59 = (enum uct_ep_attr_field)0;
    (void)tag_59;
    (void)UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR; /* master uct_ep_attr_field */
    (void)UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR; /* master uct_ep_attr_field */
    (void)UCT_EP_ATTR_FIELD_TX_TOKEN; /* master uct_ep_attr_field */
    uct_iface_is_reachable_field_mask_t typedef_60 = (uct_iface_is_reachable_field_mask_t)0;
    (void)typedef_60;
    (void)UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_SCOPE; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH; /* master uct_iface_is_reachable_field_mask_t */
    (void)UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH; /* master uct_iface_is_reachable_field_mask_t */
    uct_md_mkey_pack_flags_t typedef_61 = (uct_md_mkey_pack_flags_t)0;
    (void)typedef_61;
    (void)UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA; /* master uct_md_mkey_pack_flags_t */
    (void)UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO; /* master uct_md_mkey_pack_flags_t */
    (void)UCT_MD_MKEY_PACK_FLAG_EXPORT; /* master uct_md_mkey_pack_flags_t */
    uct_md_mem_attach_flags_t typedef_62 = (uct_md_mem_attach_flags_t)0;
    (void)typedef_62;
    (void)UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS; /* master uct_md_mem_attach_flags_t */
    uct_ep_connect_to_ep_param_field_t typedef_63 = (uct_ep_connect_to_ep_param_field_t)0;
    (void)typedef_63;
    (void)UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH; /* master uct_ep_connect_to_ep_param_field_t */
    (void)UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH; /* master uct_ep_connect_to_ep_param_field_t */
    uct_ep_is_connected_field_mask_t typedef_64 = (uct_ep_is_connected_field_mask_t)0;
    (void)typedef_64;
    (void)UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR; /* master uct_ep_is_connected_field_mask_t */
    (void)UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR; /* master uct_ep_is_connected_field_mask_t */
    (void)UCT_EP_IS_CONNECTED_FIELD_EP_ADDR; /* master uct_ep_is_connected_field_mask_t */
    uct_iface_reachability_scope_t typedef_65 = (uct_iface_reachability_scope_t)0;
    (void)typedef_65;
    (void)UCT_IFACE_REACHABILITY_SCOPE_DEVICE; /* master uct_iface_reachability_scope_t */
    (void)UCT_IFACE_REACHABILITY_SCOPE_NETWORK; /* master uct_iface_reachability_scope_t */
    uct_rkey_unpack_field_mask_t typedef_66 = (uct_rkey_unpack_field_mask_t)0;
    (void)typedef_66;
    (void)UCT_RKEY_UNPACK_FIELD_SYS_DEVICE; /* master uct_rkey_unpack_field_mask_t */
    uct_md_mem_attr_v2_field_t typedef_67 = (uct_md_mem_attr_v2_field_t)0;
    (void)typedef_67;
    (void)UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET; /* master uct_md_mem_attr_v2_field_t */
    (void)UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS; /* master uct_md_mem_attr_v2_field_t */
    enum uct_md_attr_field tag_68 = (enum uct_md_attr_field)0;
    (void)tag_68;
    uct_md_attr_field_t typedef_69 = (uct_md_attr_field_t)0;
    (void)typedef_69;
    (void)UCT_MD_ATTR_FIELD_MAX_ALLOC; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_MAX_REG; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_FLAGS; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_REG_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_REG_COST; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_COMPONENT_NAME; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_LOCAL_CPUS; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_GLOBAL_ID; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_REG_ALIGNMENT; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_GVA_MEM_TYPES; /* master uct_md_attr_field */
    (void)UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS; /* master uct_md_attr_field */
    uct_md_flags_v2_t typedef_70 = (uct_md_flags_v2_t)0;
    (void)typedef_70;
    (void)UCT_MD_FLAG_V2_FIRST; /* master uct_md_flags_v2_t */
    (void)UCT_MD_FLAG_INVALIDATE_RMA; /* master uct_md_flags_v2_t */
    (void)UCT_MD_FLAG_INVALIDATE_AMO; /* master uct_md_flags_v2_t */
    (void)UCT_MD_FLAG_MEMTYPE_COPY; /* master uct_md_flags_v2_t */
    enum uct_iface_attr_field tag_71 = (enum uct_iface_attr_field)0;
    (void)tag_71;
    (void)UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_CAP_FLAGS; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_TX_TOKEN; /* master uct_iface_attr_field */
    (void)UCT_IFACE_ATTR_FIELD_RX_TOKEN; /* master uct_iface_attr_field */
    enum uct_ep_op_info_field tag_72 = (enum uct_ep_op_info_field)0;
    (void)tag_72;
    uct_ep_op_info_field_t typedef_73 = (uct_ep_op_info_field_t)0;
    (void)typedef_73;
    (void)UCT_EP_OP_INFO_FIELD_OPERATION; /* master uct_ep_op_info_field */
    (void)UCT_EP_OP_INFO_FIELD_COMP; /* master uct_ep_op_info_field */
    (void)UCT_EP_OP_INFO_FIELD_AM; /* master uct_ep_op_info_field */
    (void)UCT_EP_OP_INFO_FIELD_RMA; /* master uct_ep_op_info_field */
    (void)UCT_EP_OP_INFO_FIELD_FLUSH; /* master uct_ep_op_info_field */
    (void)UCT_EP_OP_INFO_FIELD_ATOMIC; /* master uct_ep_op_info_field */
    uct_ep_op_info_am_field_t typedef_74 = (uct_ep_op_info_am_field_t)0;
    (void)typedef_74;
    (void)UCT_EP_OP_INFO_AM_FIELD_AM_ID; /* master uct_ep_op_info_am_field_t */
    (void)UCT_EP_OP_INFO_AM_FIELD_FLAGS; /* master uct_ep_op_info_am_field_t */
    (void)UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE; /* master uct_ep_op_info_am_field_t */
    (void)UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY; /* master uct_ep_op_info_am_field_t */
    (void)UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA; /* master uct_ep_op_info_am_field_t */
    (void)UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY; /* master uct_ep_op_info_am_field_t */
    uct_ep_op_info_rma_field_t typedef_75 = (uct_ep_op_info_rma_field_t)0;
    (void)typedef_75;
    (void)UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR; /* master uct_ep_op_info_rma_field_t */
    (void)UCT_EP_OP_INFO_RMA_FIELD_RKEY; /* master uct_ep_op_info_rma_field_t */
    (void)UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA; /* master uct_ep_op_info_rma_field_t */
    (void)UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY; /* master uct_ep_op_info_rma_field_t */
    (void)UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK; /* master uct_ep_op_info_rma_field_t */
    uct_ep_op_info_flush_field_t typedef_76 = (uct_ep_op_info_flush_field_t)0;
    (void)typedef_76;
    (void)UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS; /* master uct_ep_op_info_flush_field_t */
    uct_ep_op_info_atomic_field_t typedef_77 = (uct_ep_op_info_atomic_field_t)0;
    (void)typedef_77;
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_OP; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT; /* master uct_ep_op_info_atomic_field_t */
    (void)UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE; /* master uct_ep_op_info_atomic_field_t */
    uct_ep_outstanding_purge_field_t typedef_78 = (uct_ep_outstanding_purge_field_t)0;
    (void)typedef_78;
    (void)UCT_EP_OUTSTANDING_FIELD_RX_TOKEN; /* master uct_ep_outstanding_purge_field_t */
    (void)UCT_EP_OUTSTANDING_FIELD_CB; /* master uct_ep_outstanding_purge_field_t */
    (void)UCT_EP_OUTSTANDING_FIELD_ARG; /* master uct_ep_outstanding_purge_field_t */
    return 0;
}
