//! Value of every UCX master enum constant and integer macro of the public
//! UCT/UCS headers, checked against our constants in `uct::abi` (numbers read
//! off UCX master with gdb and copied here as data), plus the failover
//! additions. Values compare modulo 2^64 because gdb prints macros such as
//! `UCS_CALLBACKQ_ID_NULL` (-1) as unsigned.

use uct::abi;

#[test]
fn constants_match_ucx_master() {
    let expected: &[(&str, u64, u64)] = &[
        (
            "UCS_CALLBACKQ_FAST_COUNT",
            abi::UCS_CALLBACKQ_FAST_COUNT as i128 as u64,
            7,
        ),
        (
            "UCS_CALLBACKQ_ID_NULL",
            abi::UCS_CALLBACKQ_ID_NULL as i128 as u64,
            18446744073709551615,
        ),
        (
            "UCS_MEMORY_TYPES_CPU_ACCESSIBLE",
            abi::UCS_MEMORY_TYPES_CPU_ACCESSIBLE as i128 as u64,
            337,
        ),
        (
            "UCS_MEMORY_TYPE_CUDA",
            abi::UCS_MEMORY_TYPE_CUDA as i128 as u64,
            1,
        ),
        (
            "UCS_MEMORY_TYPE_CUDA_MANAGED",
            abi::UCS_MEMORY_TYPE_CUDA_MANAGED as i128 as u64,
            2,
        ),
        (
            "UCS_MEMORY_TYPE_GAUDI",
            abi::UCS_MEMORY_TYPE_GAUDI as i128 as u64,
            9,
        ),
        (
            "UCS_MEMORY_TYPE_HOST",
            abi::UCS_MEMORY_TYPE_HOST as i128 as u64,
            0,
        ),
        (
            "UCS_MEMORY_TYPE_LAST",
            abi::UCS_MEMORY_TYPE_LAST as i128 as u64,
            10,
        ),
        (
            "UCS_MEMORY_TYPE_RDMA",
            abi::UCS_MEMORY_TYPE_RDMA as i128 as u64,
            5,
        ),
        (
            "UCS_MEMORY_TYPE_ROCM",
            abi::UCS_MEMORY_TYPE_ROCM as i128 as u64,
            3,
        ),
        (
            "UCS_MEMORY_TYPE_ROCM_MANAGED",
            abi::UCS_MEMORY_TYPE_ROCM_MANAGED as i128 as u64,
            4,
        ),
        (
            "UCS_MEMORY_TYPE_UNKNOWN",
            abi::UCS_MEMORY_TYPE_UNKNOWN as i128 as u64,
            10,
        ),
        (
            "UCS_MEMORY_TYPE_ZE_DEVICE",
            abi::UCS_MEMORY_TYPE_ZE_DEVICE as i128 as u64,
            7,
        ),
        (
            "UCS_MEMORY_TYPE_ZE_HOST",
            abi::UCS_MEMORY_TYPE_ZE_HOST as i128 as u64,
            6,
        ),
        (
            "UCS_MEMORY_TYPE_ZE_MANAGED",
            abi::UCS_MEMORY_TYPE_ZE_MANAGED as i128 as u64,
            8,
        ),
        (
            "UCS_MEM_FLAG_REGISTRABLE",
            abi::UCS_MEM_FLAG_REGISTRABLE as i128 as u64,
            1,
        ),
        (
            "UCS_THREAD_MODE_LAST",
            abi::UCS_THREAD_MODE_LAST as i128 as u64,
            3,
        ),
        (
            "UCS_THREAD_MODE_MULTI",
            abi::UCS_THREAD_MODE_MULTI as i128 as u64,
            2,
        ),
        (
            "UCS_THREAD_MODE_SERIALIZED",
            abi::UCS_THREAD_MODE_SERIALIZED as i128 as u64,
            1,
        ),
        (
            "UCS_THREAD_MODE_SINGLE",
            abi::UCS_THREAD_MODE_SINGLE as i128 as u64,
            0,
        ),
        (
            "UCT_ALLOC_METHOD_DEFAULT",
            abi::UCT_ALLOC_METHOD_DEFAULT as i128 as u64,
            5,
        ),
        (
            "UCT_ALLOC_METHOD_HEAP",
            abi::UCT_ALLOC_METHOD_HEAP as i128 as u64,
            2,
        ),
        (
            "UCT_ALLOC_METHOD_HUGE",
            abi::UCT_ALLOC_METHOD_HUGE as i128 as u64,
            4,
        ),
        (
            "UCT_ALLOC_METHOD_LAST",
            abi::UCT_ALLOC_METHOD_LAST as i128 as u64,
            5,
        ),
        (
            "UCT_ALLOC_METHOD_MD",
            abi::UCT_ALLOC_METHOD_MD as i128 as u64,
            1,
        ),
        (
            "UCT_ALLOC_METHOD_MMAP",
            abi::UCT_ALLOC_METHOD_MMAP as i128 as u64,
            3,
        ),
        (
            "UCT_ALLOC_METHOD_THP",
            abi::UCT_ALLOC_METHOD_THP as i128 as u64,
            0,
        ),
        ("UCT_AM_ID_BITS", abi::UCT_AM_ID_BITS as i128 as u64, 5),
        ("UCT_AM_ID_MAX", abi::UCT_AM_ID_MAX as i128 as u64, 32),
        (
            "UCT_ATOMIC_OP_ADD",
            abi::UCT_ATOMIC_OP_ADD as i128 as u64,
            0,
        ),
        (
            "UCT_ATOMIC_OP_AND",
            abi::UCT_ATOMIC_OP_AND as i128 as u64,
            1,
        ),
        (
            "UCT_ATOMIC_OP_CSWAP",
            abi::UCT_ATOMIC_OP_CSWAP as i128 as u64,
            5,
        ),
        (
            "UCT_ATOMIC_OP_LAST",
            abi::UCT_ATOMIC_OP_LAST as i128 as u64,
            6,
        ),
        ("UCT_ATOMIC_OP_OR", abi::UCT_ATOMIC_OP_OR as i128 as u64, 2),
        (
            "UCT_ATOMIC_OP_SWAP",
            abi::UCT_ATOMIC_OP_SWAP as i128 as u64,
            4,
        ),
        (
            "UCT_ATOMIC_OP_XOR",
            abi::UCT_ATOMIC_OP_XOR as i128 as u64,
            3,
        ),
        (
            "UCT_COMPONENT_NAME_MAX",
            abi::UCT_COMPONENT_NAME_MAX as i128 as u64,
            16,
        ),
        (
            "UCT_DEVICE_NAME_MAX",
            abi::UCT_DEVICE_NAME_MAX as i128 as u64,
            32,
        ),
        (
            "UCT_DEVICE_TYPE_ACC",
            abi::UCT_DEVICE_TYPE_ACC as i128 as u64,
            2,
        ),
        (
            "UCT_DEVICE_TYPE_LAST",
            abi::UCT_DEVICE_TYPE_LAST as i128 as u64,
            4,
        ),
        (
            "UCT_DEVICE_TYPE_NET",
            abi::UCT_DEVICE_TYPE_NET as i128 as u64,
            0,
        ),
        (
            "UCT_DEVICE_TYPE_SELF",
            abi::UCT_DEVICE_TYPE_SELF as i128 as u64,
            3,
        ),
        (
            "UCT_DEVICE_TYPE_SHM",
            abi::UCT_DEVICE_TYPE_SHM as i128 as u64,
            1,
        ),
        (
            "UCT_DMABUF_FD_INVALID",
            abi::UCT_DMABUF_FD_INVALID as i128 as u64,
            18446744073709551615,
        ),
        (
            "UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH",
            abi::UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH as i128 as u64,
            1,
        ),
        (
            "UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH",
            abi::UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH as i128 as u64,
            2,
        ),
        (
            "UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR",
            abi::UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR as i128 as u64,
            1,
        ),
        (
            "UCT_EP_IS_CONNECTED_FIELD_EP_ADDR",
            abi::UCT_EP_IS_CONNECTED_FIELD_EP_ADDR as i128 as u64,
            4,
        ),
        (
            "UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR",
            abi::UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OP_AM_BCOPY",
            abi::UCT_EP_OP_AM_BCOPY as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_AM_SHORT",
            abi::UCT_EP_OP_AM_SHORT as i128 as u64,
            0,
        ),
        (
            "UCT_EP_OP_AM_ZCOPY",
            abi::UCT_EP_OP_AM_ZCOPY as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OP_ATOMIC_FETCH",
            abi::UCT_EP_OP_ATOMIC_FETCH as i128 as u64,
            14,
        ),
        (
            "UCT_EP_OP_ATOMIC_POST",
            abi::UCT_EP_OP_ATOMIC_POST as i128 as u64,
            13,
        ),
        (
            "UCT_EP_OP_EAGER_BCOPY",
            abi::UCT_EP_OP_EAGER_BCOPY as i128 as u64,
            10,
        ),
        (
            "UCT_EP_OP_EAGER_SHORT",
            abi::UCT_EP_OP_EAGER_SHORT as i128 as u64,
            9,
        ),
        (
            "UCT_EP_OP_EAGER_ZCOPY",
            abi::UCT_EP_OP_EAGER_ZCOPY as i128 as u64,
            11,
        ),
        ("UCT_EP_OP_FLUSH", abi::UCT_EP_OP_FLUSH as i128 as u64, 15),
        (
            "UCT_EP_OP_GET_BCOPY",
            abi::UCT_EP_OP_GET_BCOPY as i128 as u64,
            7,
        ),
        (
            "UCT_EP_OP_GET_SHORT",
            abi::UCT_EP_OP_GET_SHORT as i128 as u64,
            6,
        ),
        (
            "UCT_EP_OP_GET_ZCOPY",
            abi::UCT_EP_OP_GET_ZCOPY as i128 as u64,
            8,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_AM_ID",
            abi::UCT_EP_OP_INFO_AM_FIELD_AM_ID as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_FLAGS",
            abi::UCT_EP_OP_INFO_AM_FIELD_FLAGS as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE",
            abi::UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY",
            abi::UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY as i128 as u64,
            8,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA",
            abi::UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA as i128 as u64,
            16,
        ),
        (
            "UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY",
            abi::UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY as i128 as u64,
            32,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE as i128 as u64,
            16,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_OP",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_OP as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT as i128 as u64,
            32,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE as i128 as u64,
            64,
        ),
        (
            "UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE",
            abi::UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE as i128 as u64,
            8,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_AM",
            abi::UCT_EP_OP_INFO_FIELD_AM as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_ATOMIC",
            abi::UCT_EP_OP_INFO_FIELD_ATOMIC as i128 as u64,
            32,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_COMP",
            abi::UCT_EP_OP_INFO_FIELD_COMP as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_FLUSH",
            abi::UCT_EP_OP_INFO_FIELD_FLUSH as i128 as u64,
            16,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_OPERATION",
            abi::UCT_EP_OP_INFO_FIELD_OPERATION as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_INFO_FIELD_RMA",
            abi::UCT_EP_OP_INFO_FIELD_RMA as i128 as u64,
            8,
        ),
        (
            "UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS",
            abi::UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA",
            abi::UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK",
            abi::UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK as i128 as u64,
            16,
        ),
        (
            "UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY",
            abi::UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY as i128 as u64,
            8,
        ),
        (
            "UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR",
            abi::UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR as i128 as u64,
            1,
        ),
        (
            "UCT_EP_OP_INFO_RMA_FIELD_RKEY",
            abi::UCT_EP_OP_INFO_RMA_FIELD_RKEY as i128 as u64,
            2,
        ),
        ("UCT_EP_OP_LAST", abi::UCT_EP_OP_LAST as i128 as u64, 16),
        (
            "UCT_EP_OP_PUT_BCOPY",
            abi::UCT_EP_OP_PUT_BCOPY as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OP_PUT_SHORT",
            abi::UCT_EP_OP_PUT_SHORT as i128 as u64,
            3,
        ),
        (
            "UCT_EP_OP_PUT_ZCOPY",
            abi::UCT_EP_OP_PUT_ZCOPY as i128 as u64,
            5,
        ),
        (
            "UCT_EP_OP_RNDV_ZCOPY",
            abi::UCT_EP_OP_RNDV_ZCOPY as i128 as u64,
            12,
        ),
        (
            "UCT_EP_OUTSTANDING_FIELD_ARG",
            abi::UCT_EP_OUTSTANDING_FIELD_ARG as i128 as u64,
            4,
        ),
        (
            "UCT_EP_OUTSTANDING_FIELD_CB",
            abi::UCT_EP_OUTSTANDING_FIELD_CB as i128 as u64,
            2,
        ),
        (
            "UCT_EP_OUTSTANDING_FIELD_RX_TOKEN",
            abi::UCT_EP_OUTSTANDING_FIELD_RX_TOKEN as i128 as u64,
            1,
        ),
        (
            "UCT_IFACE_FLAG_AM_BCOPY",
            abi::UCT_IFACE_FLAG_AM_BCOPY as i128 as u64,
            2,
        ),
        (
            "UCT_IFACE_FLAG_AM_DUP",
            abi::UCT_IFACE_FLAG_AM_DUP as i128 as u64,
            8796093022208,
        ),
        (
            "UCT_IFACE_FLAG_AM_SHORT",
            abi::UCT_IFACE_FLAG_AM_SHORT as i128 as u64,
            1,
        ),
        (
            "UCT_IFACE_FLAG_AM_ZCOPY",
            abi::UCT_IFACE_FLAG_AM_ZCOPY as i128 as u64,
            4,
        ),
        (
            "UCT_IFACE_FLAG_ATOMIC_CPU",
            abi::UCT_IFACE_FLAG_ATOMIC_CPU as i128 as u64,
            1073741824,
        ),
        (
            "UCT_IFACE_FLAG_ATOMIC_DEVICE",
            abi::UCT_IFACE_FLAG_ATOMIC_DEVICE as i128 as u64,
            2147483648,
        ),
        (
            "UCT_IFACE_FLAG_CB_ASYNC",
            abi::UCT_IFACE_FLAG_CB_ASYNC as i128 as u64,
            35184372088832,
        ),
        (
            "UCT_IFACE_FLAG_CB_SYNC",
            abi::UCT_IFACE_FLAG_CB_SYNC as i128 as u64,
            17592186044416,
        ),
        (
            "UCT_IFACE_FLAG_CONNECT_TO_EP",
            abi::UCT_IFACE_FLAG_CONNECT_TO_EP as i128 as u64,
            2199023255552,
        ),
        (
            "UCT_IFACE_FLAG_CONNECT_TO_IFACE",
            abi::UCT_IFACE_FLAG_CONNECT_TO_IFACE as i128 as u64,
            1099511627776,
        ),
        (
            "UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR",
            abi::UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR as i128 as u64,
            4398046511104,
        ),
        (
            "UCT_IFACE_FLAG_DEVICE_EP",
            abi::UCT_IFACE_FLAG_DEVICE_EP as i128 as u64,
            36028797018963968,
        ),
        (
            "UCT_IFACE_FLAG_DEVICE_LKEY",
            abi::UCT_IFACE_FLAG_DEVICE_LKEY as i128 as u64,
            72057594037927936,
        ),
        (
            "UCT_IFACE_FLAG_EP_CHECK",
            abi::UCT_IFACE_FLAG_EP_CHECK as i128 as u64,
            549755813888,
        ),
        (
            "UCT_IFACE_FLAG_EP_KEEPALIVE",
            abi::UCT_IFACE_FLAG_EP_KEEPALIVE as i128 as u64,
            70368744177664,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_AM_ID",
            abi::UCT_IFACE_FLAG_ERRHANDLE_AM_ID as i128 as u64,
            34359738368,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF",
            abi::UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF as i128 as u64,
            8589934592,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN",
            abi::UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN as i128 as u64,
            137438953472,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE",
            abi::UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE as i128 as u64,
            274877906944,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM",
            abi::UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM as i128 as u64,
            68719476736,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF",
            abi::UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF as i128 as u64,
            4294967296,
        ),
        (
            "UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF",
            abi::UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF as i128 as u64,
            17179869184,
        ),
        (
            "UCT_IFACE_FLAG_EVENT_ASYNC_CB",
            abi::UCT_IFACE_FLAG_EVENT_ASYNC_CB as i128 as u64,
            16,
        ),
        (
            "UCT_IFACE_FLAG_EVENT_FD",
            abi::UCT_IFACE_FLAG_EVENT_FD as i128 as u64,
            8,
        ),
        (
            "UCT_IFACE_FLAG_EVENT_RECV",
            abi::UCT_IFACE_FLAG_EVENT_RECV as i128 as u64,
            2,
        ),
        (
            "UCT_IFACE_FLAG_EVENT_RECV_SIG",
            abi::UCT_IFACE_FLAG_EVENT_RECV_SIG as i128 as u64,
            4,
        ),
        (
            "UCT_IFACE_FLAG_EVENT_SEND_COMP",
            abi::UCT_IFACE_FLAG_EVENT_SEND_COMP as i128 as u64,
            1,
        ),
        (
            "UCT_IFACE_FLAG_GET_BCOPY",
            abi::UCT_IFACE_FLAG_GET_BCOPY as i128 as u64,
            512,
        ),
        (
            "UCT_IFACE_FLAG_GET_SHORT",
            abi::UCT_IFACE_FLAG_GET_SHORT as i128 as u64,
            256,
        ),
        (
            "UCT_IFACE_FLAG_GET_ZCOPY",
            abi::UCT_IFACE_FLAG_GET_ZCOPY as i128 as u64,
            1024,
        ),
        (
            "UCT_IFACE_FLAG_INTER_NODE",
            abi::UCT_IFACE_FLAG_INTER_NODE as i128 as u64,
            18014398509481984,
        ),
        (
            "UCT_IFACE_FLAG_PENDING",
            abi::UCT_IFACE_FLAG_PENDING as i128 as u64,
            8,
        ),
        (
            "UCT_IFACE_FLAG_PUT_BCOPY",
            abi::UCT_IFACE_FLAG_PUT_BCOPY as i128 as u64,
            32,
        ),
        (
            "UCT_IFACE_FLAG_PUT_SHORT",
            abi::UCT_IFACE_FLAG_PUT_SHORT as i128 as u64,
            16,
        ),
        (
            "UCT_IFACE_FLAG_PUT_ZCOPY",
            abi::UCT_IFACE_FLAG_PUT_ZCOPY as i128 as u64,
            64,
        ),
        (
            "UCT_IFACE_FLAG_TAG_EAGER_BCOPY",
            abi::UCT_IFACE_FLAG_TAG_EAGER_BCOPY as i128 as u64,
            2251799813685248,
        ),
        (
            "UCT_IFACE_FLAG_TAG_EAGER_SHORT",
            abi::UCT_IFACE_FLAG_TAG_EAGER_SHORT as i128 as u64,
            1125899906842624,
        ),
        (
            "UCT_IFACE_FLAG_TAG_EAGER_ZCOPY",
            abi::UCT_IFACE_FLAG_TAG_EAGER_ZCOPY as i128 as u64,
            4503599627370496,
        ),
        (
            "UCT_IFACE_FLAG_TAG_RNDV_ZCOPY",
            abi::UCT_IFACE_FLAG_TAG_RNDV_ZCOPY as i128 as u64,
            9007199254740992,
        ),
        (
            "UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY",
            abi::UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY as i128 as u64,
            2,
        ),
        (
            "UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY",
            abi::UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY as i128 as u64,
            1,
        ),
        (
            "UCT_IFACE_FLAG_V2_QUERY_TOKEN",
            abi::UCT_IFACE_FLAG_V2_QUERY_TOKEN as i128 as u64,
            4,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR as i128 as u64,
            1,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH as i128 as u64,
            32,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR as i128 as u64,
            2,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH as i128 as u64,
            64,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING as i128 as u64,
            4,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH as i128 as u64,
            8,
        ),
        (
            "UCT_IFACE_IS_REACHABLE_FIELD_SCOPE",
            abi::UCT_IFACE_IS_REACHABLE_FIELD_SCOPE as i128 as u64,
            16,
        ),
        (
            "UCT_IFACE_REACHABILITY_SCOPE_DEVICE",
            abi::UCT_IFACE_REACHABILITY_SCOPE_DEVICE as i128 as u64,
            0,
        ),
        (
            "UCT_IFACE_REACHABILITY_SCOPE_NETWORK",
            abi::UCT_IFACE_REACHABILITY_SCOPE_NETWORK as i128 as u64,
            1,
        ),
        (
            "UCT_INVALID_RKEY",
            abi::UCT_INVALID_RKEY as i128 as u64,
            18446744073709551615,
        ),
        ("UCT_MADV_NORMAL", abi::UCT_MADV_NORMAL as i128 as u64, 0),
        (
            "UCT_MADV_WILLNEED",
            abi::UCT_MADV_WILLNEED as i128 as u64,
            1,
        ),
        (
            "UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES as i128 as u64,
            256,
        ),
        (
            "UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES as i128 as u64,
            128,
        ),
        (
            "UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES as i128 as u64,
            32,
        ),
        (
            "UCT_MD_ATTR_FIELD_COMPONENT_NAME",
            abi::UCT_MD_ATTR_FIELD_COMPONENT_NAME as i128 as u64,
            2048,
        ),
        (
            "UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES as i128 as u64,
            64,
        ),
        (
            "UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES as i128 as u64,
            512,
        ),
        (
            "UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE",
            abi::UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE as i128 as u64,
            16384,
        ),
        (
            "UCT_MD_ATTR_FIELD_FLAGS",
            abi::UCT_MD_ATTR_FIELD_FLAGS as i128 as u64,
            4,
        ),
        (
            "UCT_MD_ATTR_FIELD_GLOBAL_ID",
            abi::UCT_MD_ATTR_FIELD_GLOBAL_ID as i128 as u64,
            32768,
        ),
        (
            "UCT_MD_ATTR_FIELD_GVA_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_GVA_MEM_TYPES as i128 as u64,
            131072,
        ),
        (
            "UCT_MD_ATTR_FIELD_LOCAL_CPUS",
            abi::UCT_MD_ATTR_FIELD_LOCAL_CPUS as i128 as u64,
            8192,
        ),
        (
            "UCT_MD_ATTR_FIELD_MAX_ALLOC",
            abi::UCT_MD_ATTR_FIELD_MAX_ALLOC as i128 as u64,
            1,
        ),
        (
            "UCT_MD_ATTR_FIELD_MAX_REG",
            abi::UCT_MD_ATTR_FIELD_MAX_REG as i128 as u64,
            2,
        ),
        (
            "UCT_MD_ATTR_FIELD_REG_ALIGNMENT",
            abi::UCT_MD_ATTR_FIELD_REG_ALIGNMENT as i128 as u64,
            65536,
        ),
        (
            "UCT_MD_ATTR_FIELD_REG_COST",
            abi::UCT_MD_ATTR_FIELD_REG_COST as i128 as u64,
            1024,
        ),
        (
            "UCT_MD_ATTR_FIELD_REG_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_REG_MEM_TYPES as i128 as u64,
            8,
        ),
        (
            "UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES",
            abi::UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES as i128 as u64,
            16,
        ),
        (
            "UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS",
            abi::UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS as i128 as u64,
            262144,
        ),
        (
            "UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE",
            abi::UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE as i128 as u64,
            4096,
        ),
        (
            "UCT_MD_FLAG_INVALIDATE_AMO",
            abi::UCT_MD_FLAG_INVALIDATE_AMO as i128 as u64,
            4096,
        ),
        (
            "UCT_MD_FLAG_INVALIDATE_RMA",
            abi::UCT_MD_FLAG_INVALIDATE_RMA as i128 as u64,
            2048,
        ),
        (
            "UCT_MD_FLAG_MEMTYPE_COPY",
            abi::UCT_MD_FLAG_MEMTYPE_COPY as i128 as u64,
            8192,
        ),
        (
            "UCT_MD_FLAG_V2_FIRST",
            abi::UCT_MD_FLAG_V2_FIRST as i128 as u64,
            2048,
        ),
        (
            "UCT_MD_GLOBAL_ID_MAX",
            abi::UCT_MD_GLOBAL_ID_MAX as i128 as u64,
            256,
        ),
        (
            "UCT_MD_MEM_ATTACH_FIELD_FLAGS",
            abi::UCT_MD_MEM_ATTACH_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE",
            abi::UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS",
            abi::UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH",
            abi::UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH as i128 as u64,
            8,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS",
            abi::UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS as i128 as u64,
            4,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_DMABUF_FD",
            abi::UCT_MD_MEM_ATTR_FIELD_DMABUF_FD as i128 as u64,
            16,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET",
            abi::UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET as i128 as u64,
            32,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_MEM_TYPE",
            abi::UCT_MD_MEM_ATTR_FIELD_MEM_TYPE as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_ATTR_FIELD_SYS_DEV",
            abi::UCT_MD_MEM_ATTR_FIELD_SYS_DEV as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH as i128 as u64,
            8,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS as i128 as u64,
            4,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD as i128 as u64,
            16,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET as i128 as u64,
            32,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS as i128 as u64,
            64,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV",
            abi::UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MEM_DEREG_FIELD_COMPLETION",
            abi::UCT_MD_MEM_DEREG_FIELD_COMPLETION as i128 as u64,
            4,
        ),
        (
            "UCT_MD_MEM_DEREG_FIELD_FLAGS",
            abi::UCT_MD_MEM_DEREG_FIELD_FLAGS as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MEM_DEREG_FIELD_MEMH",
            abi::UCT_MD_MEM_DEREG_FIELD_MEMH as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_DEREG_FLAG_INVALIDATE",
            abi::UCT_MD_MEM_DEREG_FLAG_INVALIDATE as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_REG_FIELD_DMABUF_FD",
            abi::UCT_MD_MEM_REG_FIELD_DMABUF_FD as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET",
            abi::UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET as i128 as u64,
            4,
        ),
        (
            "UCT_MD_MEM_REG_FIELD_FLAGS",
            abi::UCT_MD_MEM_REG_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MEM_REG_FIELD_MEM_TYPE",
            abi::UCT_MD_MEM_REG_FIELD_MEM_TYPE as i128 as u64,
            8,
        ),
        (
            "UCT_MD_MKEY_PACK_FIELD_FLAGS",
            abi::UCT_MD_MKEY_PACK_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_MD_MKEY_PACK_FLAG_EXPORT",
            abi::UCT_MD_MKEY_PACK_FLAG_EXPORT as i128 as u64,
            4,
        ),
        (
            "UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO",
            abi::UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO as i128 as u64,
            2,
        ),
        (
            "UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA",
            abi::UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA as i128 as u64,
            1,
        ),
        ("UCT_MD_NAME_MAX", abi::UCT_MD_NAME_MAX as i128 as u64, 16),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS as i128 as u64,
            2,
        ),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_FLAGS",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_MDS",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_MDS as i128 as u64,
            8,
        ),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE as i128 as u64,
            4,
        ),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_NAME",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_NAME as i128 as u64,
            16,
        ),
        (
            "UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE",
            abi::UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE as i128 as u64,
            32,
        ),
        (
            "UCT_PENDING_REQ_PRIV_LEN",
            abi::UCT_PENDING_REQ_PRIV_LEN as i128 as u64,
            40,
        ),
        (
            "UCT_PERF_ATTR_FLAGS_TX_RX_SHARED",
            abi::UCT_PERF_ATTR_FLAGS_TX_RX_SHARED as i128 as u64,
            1,
        ),
        (
            "UCT_RKEY_UNPACK_FIELD_SYS_DEVICE",
            abi::UCT_RKEY_UNPACK_FIELD_SYS_DEVICE as i128 as u64,
            1,
        ),
        (
            "UCT_SOCKADDR_ACC_LOCAL",
            abi::UCT_SOCKADDR_ACC_LOCAL as i128 as u64,
            0,
        ),
        (
            "UCT_SOCKADDR_ACC_REMOTE",
            abi::UCT_SOCKADDR_ACC_REMOTE as i128 as u64,
            1,
        ),
        ("UCT_TAG_PRIV_LEN", abi::UCT_TAG_PRIV_LEN as i128 as u64, 32),
        ("UCT_TL_NAME_MAX", abi::UCT_TL_NAME_MAX as i128 as u64, 10),
        (
            "UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS",
            abi::UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS as i128 as u64,
            1,
        ),
        (
            "UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS",
            abi::UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS as i128 as u64,
            1,
        ),
    ];
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(_, ours, want)| ours != want)
        .map(|(name, ours, want)| format!("{name}: expected {want:#x}, ours {ours:#x}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "constants differ from UCX master:\n{}",
        wrong.join("\n")
    );
}
