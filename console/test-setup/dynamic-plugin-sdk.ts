// The part of @openshift-console/dynamic-plugin-sdk the plugin uses, as jest mocks: each test
// says what the cluster holds and what the user may do.
export const useK8sWatchResource = jest.fn();
export const useAccessReview = jest.fn(() => [true, false]);
export const k8sPatch = jest.fn();
export const k8sGet = jest.fn();
