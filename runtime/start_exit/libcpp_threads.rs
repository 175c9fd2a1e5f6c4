//! The `std::__1::__libcpp_*` threading functions libc++ calls for its mutexes,
//! condition variables, `call_once`, thread-local keys and threads, as the vendor's
//! `start_exit` stubs them: a kernel runs as the one thread of its core.
//!
//! The symbols are mangled for libc++ over newlib's pthread types on the 32-bit Xtensa
//! ABI (`pthread_mutex_t`, `pthread_cond_t`, `pthread_key_t` and `pthread_t` are
//! `unsigned int`, mangled `j`; `pthread_once_t` is a struct of two `int`s).
//!
//! - A mutex never contends: lock, trylock and unlock succeed.
//! - Waiting on a condition variable could only wait forever (nothing else can signal
//!   it): `wait` and `timedwait` fail with `EPERM` instead; signal and broadcast succeed.
//! - `execute_once` runs the routine the first time, as `call_once` requires.
//! - Thread creation fails with `EAGAIN`; the current thread's id is 1, a null thread
//!   is 0; join and detach fail with `ESRCH`.
//! - Thread-local keys are [`TLS_KEYS`] per core.

use core::ffi::{c_int, c_void};

/// `EPERM`, as newlib numbers it.
const EPERM: c_int = 1;
/// `ESRCH`, as newlib numbers it.
const ESRCH: c_int = 3;
/// `EAGAIN`, as newlib numbers it.
const EAGAIN: c_int = 11;
/// `EINVAL`, as newlib numbers it.
const EINVAL: c_int = 22;

/// The id of the one thread of a core.
const THIS_THREAD: u32 = 1;

/// How many thread-local keys a core can create.
pub const TLS_KEYS: usize = 8;

/// `pthread_once_t` (newlib): the first member is non-zero once the routine ran.
#[repr(C)]
pub struct OnceFlag {
    is_initialized: c_int,
    init_executed: c_int,
}

crate::global::core_local_state! {
    /// This core's thread-local values: `Some` for each key created.
    fn with_tls: [Option<*mut c_void>; TLS_KEYS] = [None; TLS_KEYS];
}

/// Declares stubs that take pointers they never read and return a constant.
macro_rules! constant_stubs {
    ($($(#[$doc:meta])* $symbol:literal $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $value:expr;)*) => {$(
        $(#[$doc])*
        #[cfg_attr(c_abi, unsafe(export_name = $symbol))]
        pub extern "C" fn $name($($arg: $ty),*) -> $ret {
            $value
        }
    )*};
}

constant_stubs! {
    /// `int __libcpp_recursive_mutex_init(__libcpp_recursive_mutex_t*)`.
    "_ZNSt3__129__libcpp_recursive_mutex_initEPj" recursive_mutex_init(_m: *mut u32) -> c_int = 0;
    /// `int __libcpp_recursive_mutex_lock(__libcpp_recursive_mutex_t*)`.
    "_ZNSt3__129__libcpp_recursive_mutex_lockEPj" recursive_mutex_lock(_m: *mut u32) -> c_int = 0;
    /// `bool __libcpp_recursive_mutex_trylock(__libcpp_recursive_mutex_t*)`.
    "_ZNSt3__132__libcpp_recursive_mutex_trylockEPj" recursive_mutex_trylock(_m: *mut u32) -> bool = true;
    /// `int __libcpp_recursive_mutex_unlock(__libcpp_recursive_mutex_t*)`.
    "_ZNSt3__131__libcpp_recursive_mutex_unlockEPj" recursive_mutex_unlock(_m: *mut u32) -> c_int = 0;
    /// `int __libcpp_recursive_mutex_destroy(__libcpp_recursive_mutex_t*)`.
    "_ZNSt3__132__libcpp_recursive_mutex_destroyEPj" recursive_mutex_destroy(_m: *mut u32) -> c_int = 0;
    /// `int __libcpp_mutex_lock(__libcpp_mutex_t*)`.
    "_ZNSt3__119__libcpp_mutex_lockEPj" mutex_lock(_m: *mut u32) -> c_int = 0;
    /// `bool __libcpp_mutex_trylock(__libcpp_mutex_t*)`.
    "_ZNSt3__122__libcpp_mutex_trylockEPj" mutex_trylock(_m: *mut u32) -> bool = true;
    /// `int __libcpp_mutex_unlock(__libcpp_mutex_t*)`.
    "_ZNSt3__121__libcpp_mutex_unlockEPj" mutex_unlock(_m: *mut u32) -> c_int = 0;
    /// `int __libcpp_mutex_destroy(__libcpp_mutex_t*)`.
    "_ZNSt3__122__libcpp_mutex_destroyEPj" mutex_destroy(_m: *mut u32) -> c_int = 0;
    /// `int __libcpp_condvar_signal(__libcpp_condvar_t*)`.
    "_ZNSt3__123__libcpp_condvar_signalEPj" condvar_signal(_cv: *mut u32) -> c_int = 0;
    /// `int __libcpp_condvar_broadcast(__libcpp_condvar_t*)`.
    "_ZNSt3__126__libcpp_condvar_broadcastEPj" condvar_broadcast(_cv: *mut u32) -> c_int = 0;
    /// `int __libcpp_condvar_wait(__libcpp_condvar_t*, __libcpp_mutex_t*)`: `EPERM`.
    "_ZNSt3__121__libcpp_condvar_waitEPjS0_" condvar_wait(_cv: *mut u32, _m: *mut u32) -> c_int = EPERM;
    /// `int __libcpp_condvar_timedwait(__libcpp_condvar_t*, __libcpp_mutex_t*, timespec*)`: `EPERM`.
    "_ZNSt3__126__libcpp_condvar_timedwaitEPjS0_P8timespec"
        condvar_timedwait(_cv: *mut u32, _m: *mut u32, _deadline: *mut c_void) -> c_int = EPERM;
    /// `int __libcpp_condvar_destroy(__libcpp_condvar_t*)`.
    "_ZNSt3__124__libcpp_condvar_destroyEPj" condvar_destroy(_cv: *mut u32) -> c_int = 0;
    /// `bool __libcpp_thread_id_equal(__libcpp_thread_id, __libcpp_thread_id)`.
    "_ZNSt3__124__libcpp_thread_id_equalEjj" thread_id_equal(a: u32, b: u32) -> bool = a == b;
    /// `bool __libcpp_thread_id_less(__libcpp_thread_id, __libcpp_thread_id)`.
    "_ZNSt3__123__libcpp_thread_id_lessEjj" thread_id_less(a: u32, b: u32) -> bool = a < b;
    /// `int __libcpp_thread_create(__libcpp_thread_t*, void* (*)(void*), void*)`: `EAGAIN`.
    "_ZNSt3__122__libcpp_thread_createEPjPFPvS1_ES1_"
        thread_create(_t: *mut u32, _f: *mut c_void, _arg: *mut c_void) -> c_int = EAGAIN;
    /// `__libcpp_thread_id __libcpp_thread_get_current_id()`.
    "_ZNSt3__130__libcpp_thread_get_current_idEv" thread_get_current_id() -> u32 = THIS_THREAD;
    /// `int __libcpp_thread_join(__libcpp_thread_t*)`: `ESRCH` (no thread was created).
    "_ZNSt3__120__libcpp_thread_joinEPj" thread_join(_t: *mut u32) -> c_int = ESRCH;
    /// `int __libcpp_thread_detach(__libcpp_thread_t*)`: `ESRCH`.
    "_ZNSt3__122__libcpp_thread_detachEPj" thread_detach(_t: *mut u32) -> c_int = ESRCH;
    /// `void __libcpp_thread_yield()`.
    "_ZNSt3__121__libcpp_thread_yieldEv" thread_yield() -> () = ();
    /// `void __libcpp_thread_sleep_for(const chrono::nanoseconds&)`: returns at once
    /// (nothing else runs on the core meanwhile).
    "_ZNSt3__125__libcpp_thread_sleep_forERKNS_6chrono8durationIxNS_5ratioILx1ELx1000000000EEEEE"
        thread_sleep_for(_duration: *const i64) -> () = ();
}

/// `bool __libcpp_thread_isnull(const __libcpp_thread_t*)`.
///
/// # Safety
/// `thread` points to a thread handle.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__122__libcpp_thread_isnullEPKj"))]
pub unsafe extern "C" fn thread_isnull(thread: *const u32) -> bool {
    // SAFETY: a live handle (contract).
    unsafe { thread.read() == 0 }
}

/// `__libcpp_thread_id __libcpp_thread_get_id(const __libcpp_thread_t*)`.
///
/// # Safety
/// `thread` points to a thread handle.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__122__libcpp_thread_get_idEPKj"))]
pub unsafe extern "C" fn thread_get_id(thread: *const u32) -> u32 {
    // SAFETY: a live handle (contract).
    unsafe { thread.read() }
}

/// `int __libcpp_execute_once(__libcpp_exec_once_flag*, void (*)())`: runs `routine`
/// unless the flag says it ran.
///
/// # Safety
/// `flag` points to a `pthread_once_t`; `routine` is sound to call.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__121__libcpp_execute_onceEP14pthread_once_tPFvvE"))]
pub unsafe extern "C" fn execute_once(flag: *mut OnceFlag, routine: Option<unsafe extern "C" fn()>) -> c_int {
    let Some(routine) = routine else {
        return EINVAL;
    };
    // SAFETY: a live flag (contract), written only on this core.
    let flag = unsafe { &mut *flag };
    if flag.init_executed == 0 {
        flag.init_executed = 1;
        flag.is_initialized = 1;
        // SAFETY: contract.
        unsafe { routine() };
    }
    0
}

/// `int __libcpp_tls_create(__libcpp_tls_key*, void (*)(void*))`: the next free key,
/// or `EAGAIN` when [`TLS_KEYS`] exist. Destructors never run: the thread never exits.
///
/// # Safety
/// `key` is writable.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__119__libcpp_tls_createEPjPFvPvE"))]
pub unsafe extern "C" fn tls_create(key: *mut u32, _destructor: *mut c_void) -> c_int {
    let free = with_tls(|values| {
        let index = values.iter().position(Option::is_none)?;
        values[index] = Some(core::ptr::null_mut());
        Some(index)
    });
    match free {
        Some(index) => {
            // SAFETY: writable (contract).
            unsafe { key.write(index as u32) };
            0
        }
        None => EAGAIN,
    }
}

/// `void* __libcpp_tls_get(__libcpp_tls_key)`: null for a key never set or not created.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__116__libcpp_tls_getEj"))]
pub extern "C" fn tls_get(key: u32) -> *mut c_void {
    with_tls(|values| values.get(key as usize).copied().flatten().unwrap_or(core::ptr::null_mut()))
}

/// `int __libcpp_tls_set(__libcpp_tls_key, void*)`: `EINVAL` for a key not created.
#[cfg_attr(c_abi, unsafe(export_name = "_ZNSt3__116__libcpp_tls_setEjPv"))]
pub extern "C" fn tls_set(key: u32, value: *mut c_void) -> c_int {
    with_tls(|values| match values.get_mut(key as usize) {
        Some(Some(slot)) => {
            *slot = value;
            0
        }
        _ => EINVAL,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn mutexes_never_block_and_waits_fail_instead_of_hanging() {
        let mut m = 0u32;
        let mut cv = 0u32;
        assert_eq!((mutex_lock(&mut m), mutex_trylock(&mut m), mutex_unlock(&mut m)), (0, true, 0));
        assert_eq!(recursive_mutex_init(&mut m), 0);
        assert_eq!((recursive_mutex_lock(&mut m), recursive_mutex_lock(&mut m)), (0, 0));
        assert_eq!(condvar_wait(&mut cv, &mut m), EPERM);
        assert_eq!(condvar_signal(&mut cv), 0);
        assert_eq!(thread_create(&mut m, core::ptr::null_mut(), core::ptr::null_mut()), EAGAIN);
        assert!(thread_id_equal(thread_get_current_id(), THIS_THREAD));
        // SAFETY: a live handle.
        assert!(unsafe { thread_isnull(&0) });
    }

    static RUNS: AtomicU32 = AtomicU32::new(0);
    unsafe extern "C" fn count_run() {
        RUNS.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn execute_once_runs_the_routine_once() {
        let mut flag = OnceFlag { is_initialized: 0, init_executed: 0 };
        // SAFETY: a live flag and a routine that only counts.
        unsafe {
            assert_eq!(execute_once(&mut flag, Some(count_run)), 0);
            assert_eq!(execute_once(&mut flag, Some(count_run)), 0);
            assert_eq!(execute_once(&mut flag, None), EINVAL);
        }
        assert_eq!(RUNS.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn tls_keys_hold_values_until_they_run_out() {
        let mut keys = [0u32; TLS_KEYS];
        for key in &mut keys {
            // SAFETY: a writable key.
            assert_eq!(unsafe { tls_create(key, core::ptr::null_mut()) }, 0);
        }
        let mut spare = 0;
        // SAFETY: a writable key, as above.
        let refused = unsafe { tls_create(&mut spare, core::ptr::null_mut()) };
        assert_eq!(refused, EAGAIN);
        assert!(tls_get(keys[3]).is_null());
        assert_eq!(tls_set(keys[3], 0x40 as *mut c_void), 0);
        assert_eq!(tls_get(keys[3]) as usize, 0x40);
        assert_eq!(tls_set(TLS_KEYS as u32, core::ptr::null_mut()), EINVAL);
    }
}
